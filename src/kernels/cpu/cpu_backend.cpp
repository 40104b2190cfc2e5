// The fast CPU backend: packs weights once into backend-owned panels, runs the
// ISA-dispatched kernels, and splits work across a persistent WorkPool (threads started
// once: no per-token thread creation; work-claiming chunks, so a descheduled thread on a
// shared machine does not stall each region). Weight packing at load uses OpenMP.
#include "kernels/cpu/cpu_backend.hpp"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/backend_impls.hpp"
#include "kernels/cpu/work_pool.hpp"
#include "llmport/error.hpp"

namespace llmport::cpu {

namespace {

PackedType packed_type(DType d) {
  switch (d) {
    case DType::BF16: return PackedType::BF16;
    case DType::F16: return PackedType::F16;
    case DType::F32: return PackedType::F32;
  }
  return PackedType::F32;
}

int padded_k(int k, DType d) { return d == DType::BF16 ? (k + 1) / 2 * 2 : k; }

// Work below this many multiply-adds runs on the calling thread (a parallel region costs
// a few microseconds).
constexpr double kParallelMacs = 1 << 15;

class CpuBackend final : public Backend {
 public:
  CpuBackend(int threads, Isa isa) : isa_(isa), k_(kernel_table(isa)) { set_threads(threads); }

  std::string name() const override { return "cpu"; }
  std::string isa() const override { return isa_name(isa_); }
  void set_threads(int n) override {
    threads_ = n > 0 ? n : std::max(1, omp_get_num_procs());
    if (!pool_ || pool_->threads() != threads_) pool_ = std::make_unique<WorkPool>(threads_);
  }

  std::unique_ptr<LinearWeight> make_linear(const TensorView& w, DType compute,
                                            const TileConfig& cfg) override {
    return pack_linear(w, compute, cfg, threads_);
  }

  void linear(const LinearWeight& lw, const float* x, int m, float* y,
              const float* bias) override {
    const auto* w = dynamic_cast<const CpuLinear*>(&lw);
    if (!w) throw UsageError("cpu backend: linear weight was not made by the cpu backend");
    if (m <= 0) return;
    counters_.add(m == 1 ? "gemv" : "gemm");
    const PackedView& v = w->view();
    const void* a = x;
    int lda = v.k;
    LinearFn fn = k_.linear_f32;
    if (v.type == PackedType::BF16) {
      // x rounded to bf16 once per call: [m][kp], odd tail zero.
      const std::size_t need = static_cast<std::size_t>(m) * v.kp;
      if (xb_.size() < need) xb_.resize(need);
      for (int i = 0; i < m; ++i) {
        const float* xr = x + static_cast<std::size_t>(i) * v.k;
        uint16_t* dst = xb_.data() + static_cast<std::size_t>(i) * v.kp;
        for (int j = 0; j < v.k; ++j) dst[j] = f32_to_bf16(xr[j]);
        if (v.kp > v.k) dst[v.k] = 0;
      }
      a = xb_.data();
      lda = v.kp;
      fn = k_.linear_bf16;
    } else if (v.type == PackedType::F16) {
      fn = k_.linear_f16;
    }
    const Blocking& blk = w->blocking();
    const double macs = static_cast<double>(m) * v.n * v.k;
    const int nt = macs < kParallelMacs ? 1 : std::min(threads_, v.n_panels);
    if (nt <= 1) {
      fn(v, a, lda, m, y, bias, 0, v.n_panels, blk);
      return;
    }
    // Contiguous panel ranges aligned to the micro-kernel's panel group, several per
    // thread so a thread the OS deschedules delays at most one chunk (see WorkPool).
    // Prefill chunks also keep the GEMM's nc blocking.
    const int group = m == 1 ? std::max(1, blk.gnp) : std::max(1, blk.np);
    const int units = (v.n_panels + group - 1) / group;
    const int per_thread = m == 1 ? 16 : 4;
    const int n_chunks = std::min(units, nt * per_thread);
    pool_->run(n_chunks, [&](int c, int) {
      const int u0 = static_cast<int>(static_cast<long>(units) * c / n_chunks);
      const int u1 = static_cast<int>(static_cast<long>(units) * (c + 1) / n_chunks);
      const int p0 = std::min(v.n_panels, u0 * group), p1 = std::min(v.n_panels, u1 * group);
      if (p1 > p0) fn(v, a, lda, m, y, bias, p0, p1, blk);
    });
  }

  void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps) override {
    counters_.add("rmsnorm");
    const int nt = static_cast<double>(m) * dim < kParallelMacs ? 1 : std::min(threads_, m);
    if (nt <= 1) return k_.rmsnorm(x, w, y, 0, m, dim, eps);
    const int n_chunks = std::min(m, nt * 4);
    pool_->run(n_chunks, [&](int c, int) {
      k_.rmsnorm(x, w, y, m * c / n_chunks, m * (c + 1) / n_chunks, dim, eps);
    });
  }

  void rope(float* x, int m, int n_heads, int head_dim, const int* positions,
            const float* inv_freq) override {
    counters_.add("rope");
    const int half = head_dim / 2;
    // Table [m][half][2] of (cos, sin) of fp32 angles, shared by all heads.
    const std::size_t need = static_cast<std::size_t>(m) * half * 2;
    if (cs_.size() < need) cs_.resize(need);
    for (int t = 0; t < m; ++t)
      for (int i = 0; i < half; ++i) {
        const float ang = static_cast<float>(positions[t]) * inv_freq[i];
        cs_[(static_cast<std::size_t>(t) * half + i) * 2] = std::cos(ang);
        cs_[(static_cast<std::size_t>(t) * half + i) * 2 + 1] = std::sin(ang);
      }
    const double work = static_cast<double>(m) * n_heads * head_dim;
    const int nt = work < kParallelMacs ? 1 : std::min(threads_, m);
    if (nt <= 1) return k_.rope(x, 0, m, n_heads, head_dim, cs_.data());
    const int n_chunks = std::min(m, nt * 4);
    pool_->run(n_chunks, [&](int c, int) {
      k_.rope(x, m * c / n_chunks, m * (c + 1) / n_chunks, n_heads, head_dim, cs_.data());
    });
  }

  void attention(const float* q, const float* k_cache, const float* v_cache, int max_seq,
                 int start_pos, int m, int n_heads, int n_kv_heads, int head_dim, float scale,
                 float* out) override {
    if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
      throw ShapeError("cpu attention: n_heads " + std::to_string(n_heads) +
                       " is not a multiple of n_kv_heads " + std::to_string(n_kv_heads));
    counters_.add(m == 1 ? "attention_decode" : "attention_prefill");
    AttnArgs a;
    a.q = q;
    a.k_cache = k_cache;
    a.v_cache = v_cache;
    a.out = out;
    a.max_seq = max_seq;
    a.start_pos = start_pos;
    a.m = m;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.head_dim = head_dim;
    a.scale = scale;
    a.block_kv = 64;
    const int group = n_heads / n_kv_heads;
    const int tq = m == 1 ? 1 : std::max(1, 64 / group);  // query tokens per work item
    const int q_tiles = (m + tq - 1) / tq;
    const int items = n_kv_heads * q_tiles;
    const std::size_t per = attn_scratch_floats(tq, group, head_dim, a.block_kv);
    const double work = static_cast<double>(m) * n_heads * head_dim * (start_pos + m);
    const int nt = work < kParallelMacs ? 1 : std::min(threads_, items);
    // One scratch per pool slot (slots are unique among concurrently running chunks).
    if (attn_scratch_.size() < per * threads_) attn_scratch_.resize(per * threads_);
    float* scratch = attn_scratch_.data();
    auto item = [&](int it, float* s) {
      // Interleave kv heads so the long (late) query tiles spread over threads.
      const int kvh = it % n_kv_heads, qt = it / n_kv_heads;
      const int t0 = qt * tq, t1 = std::min(m, t0 + tq);
      k_.attention(a, kvh, t0, t1, s);
    };
    if (nt <= 1) {
      for (int it = 0; it < items; ++it) item(it, scratch);
      return;
    }
    // Late (long) query tiles first.
    pool_->run(items, [&](int c, int slot) { item(items - 1 - c, scratch + per * slot); });
  }

  void swiglu(const float* gate, const float* up, float* out, std::size_t n) override {
    counters_.add("swiglu");
    elementwise(n, [&](std::size_t i0, std::size_t i1) { k_.swiglu(gate, up, out, i0, i1); });
  }

  void add(float* x, const float* y, std::size_t n) override {
    counters_.add("add");
    elementwise(n, [&](std::size_t i0, std::size_t i1) { k_.add(x, y, i0, i1); });
  }

 private:
  template <class F>
  void elementwise(std::size_t n, F&& f) {
    const int nt = n < (1u << 16) ? 1 : threads_;
    if (nt <= 1) return f(0, n);
    // 16-float aligned chunks so every chunk stays vector-aligned.
    const std::size_t n_chunks = static_cast<std::size_t>(nt) * 4;
    const std::size_t chunk = (n / n_chunks + 15) / 16 * 16;
    pool_->run(static_cast<int>(n_chunks), [&](int c, int) {
      const std::size_t i0 = std::min(n, c * chunk);
      const std::size_t i1 = c + 1 == static_cast<int>(n_chunks) ? n : std::min(n, (c + 1) * chunk);
      if (i1 > i0) f(i0, i1);
    });
  }

  Isa isa_;
  const KernelTable& k_;
  int threads_ = 1;
  std::vector<uint16_t> xb_;          // [m][kp] x rounded to bf16
  std::vector<float> cs_;             // [m][head_dim/2][2] RoPE cos/sin
  std::vector<float> attn_scratch_;   // [threads][attn_scratch_floats]
  std::unique_ptr<WorkPool> pool_;    // persistent team of threads_ (caller included)
};

}  // namespace

// ---- packed weights -------------------------------------------------------------------

namespace {
// The packed copy lives in backend memory; the source pages of a large tensor (the file
// mapping) are paged out after packing so a bf16 run holds ~1x the weights, not 2x.
// MADV_PAGEOUT never loses data (clean file pages are re-read, anonymous ones swapped), unlike
// MADV_DONTNEED, which would zero a heap buffer. Only whole pages inside the tensor.
void release_source_pages(const TensorView& w) {
#ifdef MADV_PAGEOUT
  if (w.file.empty() || w.nbytes < (std::size_t{1} << 20)) return;
  const std::size_t page = 4096;
  const auto b = reinterpret_cast<std::uintptr_t>(w.data);
  const std::uintptr_t lo = (b + page - 1) / page * page, hi = (b + w.nbytes) / page * page;
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_PAGEOUT);
#else
  (void)w;
#endif
}
}  // namespace

std::size_t packed_bytes(int n, int k, DType dtype) {
  const std::size_t panels = static_cast<std::size_t>((n + kPanel - 1) / kPanel);
  return panels * kPanel * padded_k(k, dtype) * dtype_size(dtype);
}

CpuLinear::CpuLinear(int n, int k, DType dt, const TileConfig& cfg) {
  n_out = n;
  n_in = k;
  dtype = dt;
  config = cfg;
  blk_ = blocking_from_config(cfg);
  view_.type = packed_type(dt);
  view_.n = n;
  view_.k = k;
  view_.kp = padded_k(k, dt);
  view_.n_panels = (n + kPanel - 1) / kPanel;
  view_.panel_stride = static_cast<std::size_t>(kPanel) * view_.kp;
  nbytes_ = packed_bytes(n, k, dt);
  const bool huge = nbytes_ >= (std::size_t{4} << 20);
  const std::size_t align = huge ? (std::size_t{2} << 20) : 64;
  const std::size_t alloc = (std::max<std::size_t>(nbytes_, 64) + align - 1) / align * align;
  data_ = std::aligned_alloc(align, alloc);
  if (!data_) throw UsageError("cpu backend: out of memory packing a " + std::to_string(n) +
                               "x" + std::to_string(k) + " weight");
  if (huge) madvise(data_, alloc, MADV_HUGEPAGE);  // a hint; failure is harmless
  view_.data = data_;
}

CpuLinear::~CpuLinear() { std::free(data_); }

std::unique_ptr<CpuLinear> pack_linear(const TensorView& w, DType compute, const TileConfig& cfg,
                                       int threads) {
  if (w.shape.size() != 2 || w.shape[0] <= 0 || w.shape[1] <= 0)
    throw ShapeError("cpu backend: linear weight '" + w.name + "' must be 2-D [n_out, n_in]");
  const int n = static_cast<int>(w.shape[0]), k = static_cast<int>(w.shape[1]);
  auto lw = std::make_unique<CpuLinear>(n, k, compute, cfg);
  const PackedView& v = lw->view();
  const std::size_t src_esz = dtype_size(w.dtype);
  const char* src = static_cast<const char*>(w.data);
  void* dst = lw->data();
  const int nt = std::max(1, std::min(threads > 0 ? threads : omp_get_num_procs(), v.n_panels));
  if (w.dtype == compute) {
    // Same dtype: move the stored bits into panel order, no conversion.
    const std::size_t es = dtype_size(compute);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int p = 0; p < v.n_panels; ++p) {
      char* d = static_cast<char*>(dst) + static_cast<std::size_t>(p) * v.panel_stride * es;
      std::memset(d, 0, v.panel_stride * es);
      for (int c = 0; c < kPanel && p * kPanel + c < n; ++c) {
        const char* srow = src + static_cast<std::size_t>(p * kPanel + c) * k * es;
        if (compute == DType::BF16) {  // [kp/2][16][2]
          const uint16_t* s16 = reinterpret_cast<const uint16_t*>(srow);
          uint16_t* d16 = reinterpret_cast<uint16_t*>(d);
          for (int kk = 0; kk < k; ++kk)
            d16[(static_cast<std::size_t>(kk / 2) * kPanel + c) * 2 + (kk & 1)] = s16[kk];
        } else {  // [k][16]
          for (int kk = 0; kk < k; ++kk)
            std::memcpy(d + (static_cast<std::size_t>(kk) * kPanel + c) * es, srow + kk * es, es);
        }
      }
    }
  } else {
#pragma omp parallel num_threads(nt)
  {
    std::vector<float> row(static_cast<std::size_t>(v.kp) * kPanel, 0.0f);  // [16][kp] fp32
#pragma omp for schedule(static)
    for (int p = 0; p < v.n_panels; ++p) {
      std::fill(row.begin(), row.end(), 0.0f);
      for (int c = 0; c < kPanel; ++c) {
        const int r = p * kPanel + c;
        if (r >= n) break;
        to_f32(w.dtype, src + static_cast<std::size_t>(r) * k * src_esz,
               row.data() + static_cast<std::size_t>(c) * v.kp, static_cast<std::size_t>(k));
      }
      const std::size_t base = static_cast<std::size_t>(p) * v.panel_stride;
      if (compute == DType::BF16) {
        uint16_t* d = static_cast<uint16_t*>(dst) + base;  // [kp/2][16][2]
        for (int kk = 0; kk < v.kp / 2; ++kk)
          for (int c = 0; c < kPanel; ++c)
            for (int e = 0; e < 2; ++e)
              d[(static_cast<std::size_t>(kk) * kPanel + c) * 2 + e] =
                  f32_to_bf16(row[static_cast<std::size_t>(c) * v.kp + 2 * kk + e]);
      } else if (compute == DType::F16) {
        uint16_t* d = static_cast<uint16_t*>(dst) + base;  // [k][16]
        for (int kk = 0; kk < v.kp; ++kk)
          for (int c = 0; c < kPanel; ++c)
            d[static_cast<std::size_t>(kk) * kPanel + c] =
                f32_to_f16(row[static_cast<std::size_t>(c) * v.kp + kk]);
      } else {
        float* d = static_cast<float*>(dst) + base;  // [k][16]
        for (int kk = 0; kk < v.kp; ++kk)
          for (int c = 0; c < kPanel; ++c)
            d[static_cast<std::size_t>(kk) * kPanel + c] =
                row[static_cast<std::size_t>(c) * v.kp + kk];
      }
    }
  }
  }
  release_source_pages(w);
  return lw;
}

// ---- tile configs ----------------------------------------------------------------------

Blocking blocking_from_config(const TileConfig& cfg) {
  Blocking b;
  for (const auto& [key, val] : cfg) {
    if (val < 1)
      throw UsageError("cpu tile config: '" + key + "' must be >= 1 (got " +
                       std::to_string(val) + ")");
    if (key == "mr") b.mr = val;
    else if (key == "np") b.np = val;
    else if (key == "kc") b.kc = val;
    else if (key == "mc") b.mc = val;
    else if (key == "nc") b.nc = val;
    else if (key == "gnp") b.gnp = val;
    else
      throw UsageError("cpu tile config: unknown parameter '" + key +
                       "' (expected mr, np, kc, mc, nc, gnp)");
  }
  return b;
}

TileConfig default_tile_config(Isa isa, DType dtype, int n, int k) {
  (void)n;
  (void)k;
  if (isa == Isa::Avx2 || isa == Isa::Scalar)
    return {{"mr", 4}, {"np", 1}, {"kc", 256}, {"mc", 64}, {"nc", 256}, {"gnp", 1}};
  if (dtype == DType::F32) return {{"mr", 12}, {"np", 2}, {"kc", 256}, {"mc", 96}, {"nc", 512}, {"gnp", 4}};
  return {{"mr", 12}, {"np", 2}, {"kc", 512}, {"mc", 96}, {"nc", 512}, {"gnp", 4}};
}

std::vector<TileConfig> candidate_tile_configs(Isa isa, DType dtype, bool prefill) {
  std::vector<TileConfig> out;
  const bool narrow = isa == Isa::Avx2 || isa == Isa::Scalar;
  if (!prefill) {
    for (int g : {1, 2, 4}) out.push_back({{"gnp", g}});
    return out;
  }
  struct Reg { int mr, np; };
  std::vector<Reg> regs = narrow ? std::vector<Reg>{{4, 1}, {2, 1}}
                                 : std::vector<Reg>{{12, 2}, {8, 2}, {6, 4}, {12, 1}};
  for (const Reg& r : regs)
    for (int kc : {256, 512}) {
      const int mc = r.mr * (96 / r.mr);
      out.push_back({{"mr", r.mr}, {"np", r.np}, {"kc", kc}, {"mc", mc}, {"nc", 512}});
    }
  if (!narrow) {
    out.push_back({{"mr", 12}, {"np", 2}, {"kc", 1024}, {"mc", 96}, {"nc", 1024}});
    out.push_back({{"mr", 6}, {"np", 4}, {"kc", 512}, {"mc", 96}, {"nc", 2048}});
  }
  (void)dtype;
  return out;
}

// ---- ISA selection ---------------------------------------------------------------------

Isa parse_isa(const std::string& name) {
  for (Isa i : {Isa::Avx512Bf16, Isa::Avx512, Isa::Avx2, Isa::Scalar})
    if (name == isa_name(i)) return i;
  throw UsageError("unknown cpu ISA level '" + name +
                   "' (expected avx512bf16, avx512, avx2 or scalar)");
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa i : {Isa::Avx512Bf16, Isa::Avx512, Isa::Avx2, Isa::Scalar})
    if (isa_supported(i)) out.push_back(i);
  return out;
}

Isa default_isa() {
  if (const char* env = std::getenv("LLMPORT_CPU_ISA"); env && *env) {
    const Isa i = parse_isa(env);
    if (!isa_supported(i))
      throw UsageError(std::string("LLMPORT_CPU_ISA=") + env + ": this CPU cannot run it");
    return i;
  }
  return detect_isa();
}

std::unique_ptr<Backend> make_cpu_backend_isa(int threads, Isa isa) {
  if (!isa_supported(isa))
    throw UsageError(std::string("cpu backend: this CPU cannot run ISA level ") + isa_name(isa));
  return std::make_unique<CpuBackend>(threads, isa);
}

}  // namespace llmport::cpu

namespace llmport {
std::unique_ptr<Backend> make_cpu_backend(int threads) {
  return cpu::make_cpu_backend_isa(threads, cpu::default_isa());
}
}  // namespace llmport
