// The fast CPU backend: runs the ISA-dispatched kernels on weights packed once into
// backend-owned panels (cpu_packing.cpp, configs in tile_config.cpp), and splits work across
// a persistent WorkPool (threads started once: no per-token thread creation; work-claiming
// chunks, so a descheduled thread on a shared machine does not stall each region).
#include "kernels/cpu/cpu_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend_impls.hpp"
#include "kernels/cpu/cpu_peak.hpp"
#include "kernels/cpu/decode_chunks.hpp"
#include "kernels/cpu/quant_linear.hpp"
#include "kernels/cpu/work_pool.hpp"
#include "llmport/error.hpp"

namespace llmport::cpu {

int a_row_stride(int k, std::size_t esz) {
  const std::size_t per_line = 64 / esz;
  std::size_t lines = (static_cast<std::size_t>(k) + per_line - 1) / per_line;
  if (lines % 2 == 0) ++lines;
  return static_cast<int>(lines * per_line);
}

namespace {

// Bits of fp32 `u` rounded to bf16 and widened back (low 16 bits zero): exactly
// f32_to_bf16(u) << 16 (round-to-nearest-even, NaN stays a quiet NaN), written without
// branches so the row loops below vectorize even in this generic (SSE2) code.
inline uint32_t bf16_round_bits(uint32_t u) {
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  const uint32_t quiet_nan = (u & 0xffff0000u) | 0x00400000u;
  return static_cast<int32_t>(u & 0x7fffffffu) > 0x7f800000 ? quiet_nan : rounded;
}

// x rows [r0, r1) of [m][k] rounded to bf16 into dst rows of stride ld >= kp (k rounded
// up to even; an odd k's tail element zero).
void round_bf16_rows(const float* x, int r0, int r1, int k, int ld, uint16_t* dst) {
  for (int i = r0; i < r1; ++i) {
    const float* xr = x + static_cast<std::size_t>(i) * k;
    uint16_t* d = dst + static_cast<std::size_t>(i) * ld;
    for (int j = 0; j < k; ++j)
      d[j] = static_cast<uint16_t>(bf16_round_bits(std::bit_cast<uint32_t>(xr[j])) >> 16);
    if (k % 2) d[k] = 0;
  }
}

// Same, widened back to fp32 (exactly the bf16 value) for the fp32-FMA bf16 GEMM.
void round_bf16_rows_f32(const float* x, int r0, int r1, int k, int ld, float* dst) {
  for (int i = r0; i < r1; ++i) {
    const float* xr = x + static_cast<std::size_t>(i) * k;
    float* d = dst + static_cast<std::size_t>(i) * ld;
    for (int j = 0; j < k; ++j)
      d[j] = std::bit_cast<float>(bf16_round_bits(std::bit_cast<uint32_t>(xr[j])));
    if (k % 2) d[k] = 0.0f;
  }
}

// The packed weight behind a LinearWeight; UsageError for one another backend made.
const CpuLinear& as_cpu(const LinearWeight& lw) {
  const auto* w = dynamic_cast<const CpuLinear*>(&lw);
  if (!w) throw UsageError("cpu backend: linear weight was not made by the cpu backend");
  return *w;
}
CpuLinear& as_cpu_mut(LinearWeight& lw) { return const_cast<CpuLinear&>(as_cpu(lw)); }

// Panels [p0, p1) of chunk c when `units` groups of `group` panels (n_panels in all) are
// cut into n_chunks contiguous chunks.
std::pair<int, int> chunk_panels(int units, int n_chunks, int c, int group, int n_panels) {
  const int u0 = static_cast<int>(static_cast<long>(units) * c / n_chunks);
  const int u1 = static_cast<int>(static_cast<long>(units) * (c + 1) / n_chunks);
  return {std::min(n_panels, u0 * group), std::min(n_panels, u1 * group)};
}

// Work below this many multiply-adds runs on the calling thread (a parallel region costs
// a few microseconds).
constexpr double kParallelMacs = 1 << 15;

// Prefill attention: query rows (tokens x GQA group) per work item. Every item transposes
// each K tile it reads once for all its rows, so more rows per item amortize the
// transposes (~13% of prefill attention at 64 rows, perf on Zen 5). BM_Attention m 512,
// 2 threads, Zen 5, interleaved runs: 64 -> 128 rows +6-9% (hd 128 group 2 and hd 64
// group 8), 128 -> 256 a further +2-4%. 256 rows keep the item's running output and
// probabilities (192 KiB at head_dim 128) in L2; a 512-token prompt still has 32-64
// items on the three benchmark shapes.
constexpr int kAttnItemRows = 256;

class CpuBackend final : public Backend {
 public:
  CpuBackend(int threads, Isa isa) : isa_(isa), k_(kernel_table(isa)) {
    set_threads(threads);
    // Dispatch counter names "cpu/<isa>:<kernel>": the implementation that served each
    // call (made once: counting a call allocates nothing).
    for (int o = 0; o < kNumOps; ++o)
      op_name_[o] = std::string("cpu/") + isa_name(isa_) + ":" + kOpNames[o];
  }

  std::string name() const override { return "cpu"; }
  std::string isa() const override { return isa_name(isa_); }
  void set_threads(int n) override {
    threads_ = resolve_backend_threads(n);
    if (!pool_ || pool_->threads() != threads_) pool_ = std::make_unique<WorkPool>(threads_);
  }
  int threads() const override { return threads_; }

  void set_batch_invariant(bool on) override { batch_invariant_ = on; }
  // The kernel table's entries a `dtype` model calls, as code addresses: the AVX-512 and
  // AVX512_BF16 tables share every fp32 and fp16 kernel, so those levels share the key.
  // Both bf16 GEMMs count (the tile config's "fma" picks one per weight).
  std::string numerics_key(DType dtype) const override {
    const auto addr = [](auto fn) { return std::to_string(reinterpret_cast<std::uintptr_t>(fn)); };
    std::string key = "cpu";
    if (dtype == DType::BF16)
      key += " " + addr(k_.linear_bf16) + " " + addr(k_.linear_bf16_fma);
    else
      key += " " + addr(dtype == DType::F16 ? k_.linear_f16 : k_.linear_f32);
    for (const std::string& a : {addr(k_.rmsnorm), addr(k_.rope), addr(k_.swiglu), addr(k_.add), addr(k_.attention)})
      key += " " + a;
    return key;
  }

  // Every op in the fp dtypes at every level (scalar included); the fma GEMM path is a tile
  // config of bf16 gemm at the AVX-512 levels. q8_0/q4_0 weights (32-blocks, fp32
  // activations or q8 activation blocks by the weight's "act") for the linears at every level.
  bool supports(const OpDesc& op) const override {
    if (op.quant_block == 0 && op.quant == QuantType::None) return true;
    const bool linear = op.kind == OpKind::Gemm || op.kind == OpKind::Gemv || op.kind == OpKind::LinearGroup;
    return linear && op.quant_block == kQuantBlock && op.dtype == DType::F32 &&
           (op.quant == QuantType::Q8_0 || op.quant == QuantType::Q4_0);
  }
  TileSchema tile_schema(OpKind kind) const override { return cpu::tile_schema(kind); }
  TileConfig default_tiles(const OpDesc& op) const override {
    if (op.kind != OpKind::Gemm && op.kind != OpKind::Gemv && op.kind != OpKind::LinearGroup) return {};
    const auto dim = [&](const char* k) { return op.shape.count(k) ? op.shape.at(k) : 0; };
    // Batch-invariant mode keeps the ISA-flag defaults: its numerics stay those of every
    // machine of the level (the probe's choice is this machine's).
    const bool probe = !batch_invariant_;
    if (op.quant != QuantType::None) return default_quant_tile_config(isa_, op.quant, dim("n"), dim("k"), probe);
    return default_tile_config(isa_, op.dtype, dim("n"), dim("k"), probe);
  }
  std::vector<TileConfig> tile_candidates(const OpDesc& op) const override {
    if (op.kind != OpKind::Gemm && op.kind != OpKind::Gemv) return {};
    // A quantized weight's one key is its decode choice (act): measured on the GEMV, used
    // for every m.
    if (op.quant != QuantType::None)
      return op.kind == OpKind::Gemv ? std::vector<TileConfig>{{{kActTileKey, 0}}, {{kActTileKey, 1}}}
                                     : std::vector<TileConfig>{};
    return candidate_tile_configs(isa_, op.dtype, op.kind == OpKind::Gemm);
  }
  void retile(LinearWeight& w, const TileConfig& cfg) override {
    if (auto* q = dynamic_cast<CpuQuantLinear*>(&w)) return q->set_config(cfg);
    check_tiles(w.dtype, cfg);  // before: a refused config is not kept
    as_cpu_mut(w).set_config(cfg);
  }
  std::size_t quantized_packed_size(int n, int k, QuantType q) const override {
    return q == QuantType::None || k % kQuantBlock != 0 ? 0 : CpuQuantLinear::packed_bytes(n, k, q);
  }
  std::unique_ptr<LinearWeight> read_quantized_linear(
      int n, int k, QuantType q, const TileConfig& cfg,
      const std::function<bool(std::span<std::byte>)>& read) override {
    // No config: the default make_quantized_linear gives, so a kernel-cache hit runs the
    // act of the miss that wrote the file (the blocks do not depend on it).
    auto lw = std::make_unique<CpuQuantLinear>(n, k, q, quant_config_or_default(cfg, q, n, k));
    if (!read({lw->data(), lw->bytes()})) return nullptr;
    return lw;
  }
  std::size_t packed_size(int n, int k, DType dtype) const override {
    return cpu::packed_bytes(n, k, dtype);
  }
  std::unique_ptr<LinearWeight> linear_from_packed(int n, int k, DType dtype, const TileConfig& cfg,
                                                   std::span<const std::byte> bytes) override {
    auto lw = std::make_unique<CpuLinear>(n, k, dtype, float_config_or_default(cfg, dtype, n, k));
    check_tiles(lw->dtype, lw->config);
    if (bytes.size() != lw->bytes())
      throw UsageError("cpu: packed weight of " + std::to_string(bytes.size()) + " bytes, expected " +
                       std::to_string(lw->bytes()));
    std::memcpy(lw->data(), bytes.data(), bytes.size());
    return lw;
  }
  std::unique_ptr<LinearWeight> read_packed_linear(
      int n, int k, DType dtype, const TileConfig& cfg,
      const std::function<bool(std::span<std::byte>)>& read) override {
    auto lw = std::make_unique<CpuLinear>(n, k, dtype, float_config_or_default(cfg, dtype, n, k));
    check_tiles(lw->dtype, lw->config);
    if (!read({static_cast<std::byte*>(lw->data()), lw->bytes()})) return nullptr;
    return lw;
  }
  // `cfg`, or the level's heuristic default for an [n, k] weight in `dtype` when it is empty
  // (what make_linear packs a miss with, so a cache hit runs the same blocking).
  TileConfig float_config_or_default(const TileConfig& cfg, DType dtype, int n, int k) const {
    return cfg.empty() ? default_tile_config(isa_, dtype, n, k, !batch_invariant_) : cfg;
  }

  std::unique_ptr<LinearWeight> make_linear(const TensorView& w, DType compute,
                                            const TileConfig& cfg) override {
    // No config: the one heuristic default (the config reports name), never Blocking{}.
    const TileConfig use = w.shape.size() == 2 ? float_config_or_default(cfg, compute, static_cast<int>(w.shape[0]),
                                                                         static_cast<int>(w.shape[1]))
                                               : cfg;
    auto lw = pack_linear(w, compute, use, threads_);
    check_tiles(lw->dtype, lw->config);
    return lw;
  }

  std::unique_ptr<LinearWeight> make_quantized_linear(const TensorView& w, QuantType q,
                                                      const TileConfig& cfg) override {
    const TileConfig use = w.shape.size() == 2 ? quant_config_or_default(cfg, q, static_cast<int>(w.shape[0]),
                                                                         static_cast<int>(w.shape[1]))
                                               : cfg;
    return quantize_linear(w, q, use, threads_);
  }
  // `cfg`, or the level's default act for an [n, k] weight in format q when it is empty.
  TileConfig quant_config_or_default(const TileConfig& cfg, QuantType q, int n, int k) const {
    return cfg.empty() ? default_quant_tile_config(isa_, q, n, k, !batch_invariant_) : cfg;
  }

  void linear(const LinearWeight& lw, const float* x, int m, float* y, const float* bias,
              OpTag = {}) override {
    if (lw.quant != QuantType::None) return quant_linear(lw, x, m, y, bias);
    const CpuLinear& w = as_cpu(lw);
    if (m <= 0) return;
    check_fma_supported(w.blocking());
    const bool fma = uses_fma(w, m, batch_invariant_);
    int lda = 0;
    const void* a = prepare_a(w.view(), fma, x, m, &lda);
    run_linear(w, a, lda, fma, m, y, bias);
  }

  // One linear on A already prepared by prepare_a for this weight's path.
  void run_linear(const CpuLinear& w, const void* a, int lda, bool fma, int m, float* y,
                  const float* bias) {
    const PackedView& v = w.view();
    const Blocking& blk = w.blocking();
    count(m == 1 ? kGemv : fma ? kGemmFma : kGemm);
    const LinearFn fn = linear_fn(v.type, fma);
    const double macs = static_cast<double>(m) * v.n * v.k;
    const int nt = macs < kParallelMacs ? 1 : std::min(threads_, v.n_panels);
    if (nt <= 1) {
      fn(v, a, lda, m, y, bias, 0, v.n_panels, blk);
      return;
    }
    if (m == 1) {  // decode GEMV: guided chunks (decode_chunks.hpp)
      const int panels[1] = {v.n_panels}, groups[1] = {std::max(1, blk.gnp)};
      const DecodeChunks chunks(panels, groups, nt);
      pool_->run(chunks.size(), [&](int c, int) {
        const PanelChunk& ch = chunks[c];
        fn(v, a, lda, m, y, bias, ch.p0, ch.p1, blk);
      });
      return;
    }
    // Contiguous panel ranges aligned to the micro-kernel's panel group, several per
    // thread so a thread the OS deschedules delays at most one chunk (see WorkPool).
    // Prefill chunks also keep the GEMM's nc blocking.
    const int group = std::max(1, blk.np);
    const int units = (v.n_panels + group - 1) / group;
    const int n_chunks = std::min(units, nt * 4);
    pool_->run(n_chunks, [&](int c, int) {
      const auto [p0, p1] = chunk_panels(units, n_chunks, c, group, v.n_panels);
      if (p1 > p0) fn(v, a, lda, m, y, bias, p0, p1, blk);
    });
  }

  // Decode (m = 1): the GEMVs of one group in a single work-pool region, chunks spread over
  // the weights by panel count. A decode step has ~7 GEMVs per layer; each region costs a
  // thread wake-up and a join, which at ~1 ms per layer is a few percent. Prefill GEMMs are
  // long enough that one region per weight costs nothing: there x is rounded once per path
  // (bf16 for vdpbf16ps, widened fp32 for the FMA path) and each GEMM runs in its region.
  void linear_group(std::span<const LinearCall> calls, const float* x, int m, OpTag tag = {}) override {
    check_linear_group(calls);
    for (const LinearCall& c : calls)
      if (c.w->quant != QuantType::None) return quant_linear_group(calls, x, m, tag);
    // Fixed-size bookkeeping: no heap allocation per decode step.
    constexpr std::size_t kMaxGroup = 8;
    std::array<const CpuLinear*, kMaxGroup> ws{};
    bool same_type = calls.size() <= kMaxGroup;
    for (std::size_t i = 0; i < calls.size() && same_type; ++i) {
      ws[i] = &as_cpu(*calls[i].w);
      same_type = ws[i]->view().type == ws[0]->view().type;
    }
    if (m <= 0) return;
    if (m > 1 && same_type) {
      const void* a_path[2] = {nullptr, nullptr};  // [fma]: x prepared for that path
      int lda_path[2] = {0, 0};
      for (std::size_t i = 0; i < calls.size(); ++i) {
        check_fma_supported(ws[i]->blocking());
        const bool fma = uses_fma(*ws[i], m, batch_invariant_);
        if (!a_path[fma]) a_path[fma] = prepare_a(ws[i]->view(), fma, x, m, &lda_path[fma]);
        run_linear(*ws[i], a_path[fma], lda_path[fma], fma, m, calls[i].y, calls[i].bias);
      }
      return;
    }
    if (calls.size() < 2 || !same_type || threads_ <= 1) {
      for (const LinearCall& c : calls) linear(*c.w, x, m, c.y, c.bias);
      return;
    }
    const PackedView& v0 = ws.front()->view();
    int lda = 0;
    const void* a = prepare_a(v0, /*fma=*/false, x, 1, &lda);
    const LinearFn fn = linear_fn(v0.type, /*fma=*/false);
    // Guided chunks over the group's weights (decode_chunks.hpp).
    std::array<int, kMaxGroup> panels{}, groups{};
    for (std::size_t i = 0; i < calls.size(); ++i) {
      panels[i] = ws[i]->view().n_panels;
      groups[i] = std::max(1, ws[i]->blocking().gnp);
      count(kGemv);
    }
    const DecodeChunks chunks(std::span<const int>(panels.data(), calls.size()),
                              std::span<const int>(groups.data(), calls.size()), threads_);
    pool_->run(chunks.size(), [&](int c, int) {
      const PanelChunk& ch = chunks[c];
      const std::size_t i = static_cast<std::size_t>(ch.part);
      fn(ws[i]->view(), a, lda, 1, calls[i].y, calls[i].bias, ch.p0, ch.p1, ws[i]->blocking());
    });
  }

  void gather_rows(const LinearWeight& lw, const int* rows, int m, float* out, OpTag = {}) override {
    const PackedView& v = as_cpu(lw).view();
    count(kGather);
    for (int t = 0; t < m; ++t) {
      check_gather_row(lw, rows[t]);
      const int p = rows[t] / kPanel, c = rows[t] % kPanel;
      const std::size_t base = static_cast<std::size_t>(p) * v.panel_stride;
      float* o = out + static_cast<std::size_t>(t) * v.k;  // [k]
      if (v.type == PackedType::BF16) {  // [kp/2][16][2]
        const uint16_t* d = static_cast<const uint16_t*>(v.data) + base;
        for (int kk = 0; kk < v.k; ++kk)
          o[kk] = bf16_to_f32(d[(static_cast<std::size_t>(kk / 2) * kPanel + c) * 2 + (kk & 1)]);
      } else if (v.type == PackedType::F16) {  // [k][16]
        const uint16_t* d = static_cast<const uint16_t*>(v.data) + base;
        for (int kk = 0; kk < v.k; ++kk) o[kk] = f16_to_f32(d[static_cast<std::size_t>(kk) * kPanel + c]);
      } else {
        const float* d = static_cast<const float*>(v.data) + base;
        for (int kk = 0; kk < v.k; ++kk) o[kk] = d[static_cast<std::size_t>(kk) * kPanel + c];
      }
    }
  }

  double read_bandwidth_gbps(std::span<const LinearWeight* const> weights, int passes) override {
    if (isa_ < Isa::Avx2) return 0;
    // ~1 MiB pieces of every weight, claimed by the pool like GEMV chunks.
    struct Piece { const unsigned char* p; std::size_t n; };
    std::vector<Piece> pieces;
    std::size_t total = 0;
    for (const LinearWeight* lw : weights) {
      const std::span<const std::byte> bytes = lw->packed();
      // Packed and quantized cpu weights expose their bytes; another backend's do not.
      if (bytes.empty() && lw->bytes() > 0)
        throw UsageError("cpu backend: linear weight was not made by the cpu backend");
      const auto* base = reinterpret_cast<const unsigned char*>(bytes.data());
      const std::size_t n = bytes.size();
      constexpr std::size_t kPiece = std::size_t{1} << 20;
      for (std::size_t off = 0; off < n; off += kPiece)
        pieces.push_back({base + off, std::min(kPiece, n - off)});
      total += n;
    }
    if (pieces.empty() || total == 0) return 0;
    const bool wide = isa_ >= Isa::Avx512;
    std::vector<uint64_t> sink(static_cast<std::size_t>(threads_), 0);
    double best = 0;
    for (int pass = 0; pass < std::max(1, passes); ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      pool_->run(static_cast<int>(pieces.size()), [&](int c, int slot) {
        const Piece& pc = pieces[static_cast<std::size_t>(c)];
        sink[static_cast<std::size_t>(slot)] ^= wide ? read_xor_streams_avx512(pc.p, pc.n, 4)
                                                     : read_xor_streams_avx2(pc.p, pc.n, 4);
      });
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (dt > 0) best = std::max(best, static_cast<double>(total) / dt * 1e-9);
    }
    volatile uint64_t keep = 0;
    for (uint64_t v : sink) keep = keep ^ v;
    return best;
  }

  void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps,
               OpTag = {}) override {
    count(kRmsnorm);
    const int nt = static_cast<double>(m) * dim < kParallelMacs ? 1 : std::min(threads_, m);
    if (nt <= 1) return k_.rmsnorm(x, w, y, 0, m, dim, eps);
    const int n_chunks = std::min(m, nt * 4);
    pool_->run(n_chunks, [&](int c, int) {
      k_.rmsnorm(x, w, y, m * c / n_chunks, m * (c + 1) / n_chunks, dim, eps);
    });
  }

  void rope(float* x, int m, int n_heads, int head_dim, const int* positions,
            const float* inv_freq, OpTag = {}) override {
    count(kRope);
    const int half = head_dim / 2;
    // Table [m][half][2] of (cos, sin) of fp32 angles, shared by all heads. A forward pass
    // ropes q and k of every layer with the same positions and frequencies, so the table
    // of the previous call is reused when both match (compared by value: O(m + half)
    // instead of m * half sin/cos, ~2% of a 512-token prefill).
    const bool same = cs_pos_.size() == static_cast<std::size_t>(m) &&
                      cs_freq_.size() == static_cast<std::size_t>(half) &&
                      std::equal(positions, positions + m, cs_pos_.begin()) &&
                      std::equal(inv_freq, inv_freq + half, cs_freq_.begin());
    if (!same) {
      const std::size_t need = static_cast<std::size_t>(m) * half * 2;
      if (cs_.size() < need) cs_.resize(need);
      for (int t = 0; t < m; ++t)
        for (int i = 0; i < half; ++i) {
          const float ang = static_cast<float>(positions[t]) * inv_freq[i];
          cs_[(static_cast<std::size_t>(t) * half + i) * 2] = std::cos(ang);
          cs_[(static_cast<std::size_t>(t) * half + i) * 2 + 1] = std::sin(ang);
        }
      cs_pos_.assign(positions, positions + m);
      cs_freq_.assign(inv_freq, inv_freq + half);
    }
    const double work = static_cast<double>(m) * n_heads * head_dim;
    const int nt = work < kParallelMacs ? 1 : std::min(threads_, m);
    if (nt <= 1) return k_.rope(x, 0, m, n_heads, head_dim, cs_.data());
    const int n_chunks = std::min(m, nt * 4);
    pool_->run(n_chunks, [&](int c, int) {
      k_.rope(x, m * c / n_chunks, m * (c + 1) / n_chunks, n_heads, head_dim, cs_.data());
    });
  }

  void attention(const AttentionArgs& args, OpTag = {}) override {
    const int m = args.m, n_heads = args.n_heads, n_kv_heads = args.n_kv_heads;
    const int head_dim = args.head_dim, start_pos = args.start_pos;
    if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
      throw ShapeError("cpu attention: n_heads " + std::to_string(n_heads) +
                       " is not a multiple of n_kv_heads " + std::to_string(n_kv_heads));
    count(m == 1 ? kAttnDecode : kAttnPrefill);
    AttnArgs a;
    a.q = args.q;
    a.k_cache = args.k_cache;
    a.v_cache = args.v_cache;
    a.out = args.out;
    a.max_seq = args.kv_capacity;
    a.start_pos = start_pos;
    a.m = m;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.head_dim = head_dim;
    a.scale = args.scale;
    a.block_kv = 64;
    a.direct_scores = batch_invariant_;
    const int group = n_heads / n_kv_heads;
    // Query tokens per work item: kAttnItemRows rows, fewer where a short prompt or few kv
    // heads would leave under 4 items per thread.
    const int tiles_wanted = (4 * threads_ + n_kv_heads - 1) / n_kv_heads;
    const int tq = m == 1 ? 1
                          : std::max(1, std::min(kAttnItemRows / group,
                                                 (m + tiles_wanted - 1) / tiles_wanted));
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

  void swiglu(const float* gate, const float* up, float* out, std::size_t n, OpTag = {}) override {
    count(kSwiglu);
    elementwise(n, [&](std::size_t i0, std::size_t i1) { k_.swiglu(gate, up, out, i0, i1); });
  }

  void add(float* x, const float* y, std::size_t n, OpTag = {}) override {
    count(kAdd);
    elementwise(n, [&](std::size_t i0, std::size_t i1) { k_.add(x, y, i0, i1); });
  }

 private:
  enum Op { kGemm, kGemmFma, kGemv, kRmsnorm, kRope, kAttnPrefill, kAttnDecode, kSwiglu, kAdd, kGather,
            kGemmQuant, kGemvQuant, kGemmQ8, kGemvQ8, kNumOps };
  static constexpr const char* kOpNames[kNumOps] = {"gemm",   "gemm_fma", "gemv", "rmsnorm", "rope",
                                                    "attention_prefill", "attention_decode",
                                                    "swiglu", "add",      "gather_rows",
                                                    "gemm_quant", "gemv_quant", "gemm_quant_q8",
                                                    "gemv_quant_q8"};

  // q8_0/q4_0 weights: output columns split over the pool, every row of x per chunk. The
  // weight's "act" picks fp32 x or q8 x blocks for every m alike (batch invariance).
  void quant_linear(const LinearWeight& lw, const float* x, int m, float* y, const float* bias) {
    const auto* w = dynamic_cast<const CpuQuantLinear*>(&lw);
    if (!w) throw UsageError("cpu backend: quantized weight was not made by the cpu backend");
    if (m <= 0) return;
    const bool q8 = w->act() == ActQuant::Q8;
    count(m == 1 ? (q8 ? kGemvQ8 : kGemvQuant) : (q8 ? kGemmQ8 : kGemmQuant));
    ActQ8 xq;
    if (q8) xq = quantize_activations(x, m, w->n_in);
    const QuantLinearFn fn = quant_linear_kernel(isa_);
    const QuantLinearQ8Fn fn8 = quant_linear_q8_kernel(isa_);
    auto cols = [&](int j0, int j1) {
      if (q8) fn8(*w, xq, m, y, bias, j0, j1);
      else fn(*w, x, m, y, bias, j0, j1);
    };
    const double macs = static_cast<double>(m) * w->n_out * w->n_in;
    const int nt = macs < kParallelMacs ? 1 : threads_;
    if (nt <= 1) return cols(0, w->n_out);
    const int panels = w->n_panels(), n_chunks = std::min(panels, nt * 8);
    pool_->run(n_chunks, [&](int c, int) {
      const auto [j0, j1] = panel_chunk(*w, panels * c / n_chunks, panels * (c + 1) / n_chunks);
      cols(j0, j1);
    });
  }

  // A group of quantized weights on one x (q/k/v, gate/up): x quantized once for the
  // weights on q8 blocks, then every weight's columns in one pool region (a decode step
  // pays one wake-up per group, as the float GEMVs do). Each weight computes exactly what
  // quant_linear computes for it. Mixed groups (a weight in floats) run weight by weight.
  void quant_linear_group(std::span<const LinearCall> calls, const float* x, int m, OpTag tag) {
    constexpr std::size_t kMaxGroup = 8;
    std::array<const CpuQuantLinear*, kMaxGroup> ws{};
    bool all_quant = calls.size() <= kMaxGroup;
    bool any_q8 = false;
    for (std::size_t i = 0; i < calls.size() && all_quant; ++i) {
      ws[i] = dynamic_cast<const CpuQuantLinear*>(calls[i].w);
      all_quant = ws[i] != nullptr;
      any_q8 = any_q8 || (all_quant && ws[i]->act() == ActQuant::Q8);
    }
    if (!all_quant || m <= 0) return Backend::linear_group(calls, x, m, tag);
    ActQ8 xq;
    if (any_q8) xq = quantize_activations(x, m, ws[0]->n_in);
    const QuantLinearFn fn = quant_linear_kernel(isa_);
    const QuantLinearQ8Fn fn8 = quant_linear_q8_kernel(isa_);
    double macs = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const bool q8 = ws[i]->act() == ActQuant::Q8;
      count(m == 1 ? (q8 ? kGemvQ8 : kGemvQuant) : (q8 ? kGemmQ8 : kGemmQuant));
      macs += static_cast<double>(m) * ws[i]->n_out * ws[i]->n_in;
    }
    auto cols = [&](std::size_t i, int j0, int j1) {
      if (ws[i]->act() == ActQuant::Q8) fn8(*ws[i], xq, m, calls[i].y, calls[i].bias, j0, j1);
      else fn(*ws[i], x, m, calls[i].y, calls[i].bias, j0, j1);
    };
    if (macs < kParallelMacs || threads_ <= 1) {
      for (std::size_t i = 0; i < calls.size(); ++i) cols(i, 0, ws[i]->n_out);
      return;
    }
    // ~8 chunks per thread over the group, each weight's share by its output count.
    int total = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) total += ws[i]->n_panels();
    std::array<int, kMaxGroup + 1> first{};  // first chunk of weight i
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const long want = static_cast<long>(threads_) * 8 * ws[i]->n_panels() / std::max(1, total);
      first[i + 1] = first[i] + static_cast<int>(std::clamp<long>(want, 1, ws[i]->n_panels()));
    }
    pool_->run(first[calls.size()], [&](int c, int) {
      std::size_t i = 0;
      while (c >= first[i + 1]) ++i;
      const int nc = first[i + 1] - first[i], ci = c - first[i], np = ws[i]->n_panels();
      const auto [j0, j1] = panel_chunk(*ws[i], np * ci / nc, np * (ci + 1) / nc);
      cols(i, j0, j1);
    });
  }

  // The output columns of panels [p0, p1) (a chunk of a quantized linear is whole panels).
  static std::pair<int, int> panel_chunk(const CpuQuantLinear& w, int p0, int p1) {
    return {p0 * kQuantPanel, std::min(w.n_out, p1 * kQuantPanel)};
  }

  // x [m][k] as q8 blocks in the backend's scratch (rows on the pool when large).
  ActQ8 quantize_activations(const float* x, int m, int k) {
    const std::size_t n = static_cast<std::size_t>(m) * k;
    if (xq8_.size() < n) xq8_.resize(n);
    if (xq8_d_.size() < n / kQuantBlock) xq8_d_.resize(n / kQuantBlock);
    if (xq8_s_.size() < n / kQuantBlock) xq8_s_.resize(n / kQuantBlock);
    const int nt = static_cast<double>(n) < (1 << 18) ? 1 : std::min(threads_, m);
    if (nt <= 1) {
      quantize_act_rows(x, 0, m, k, xq8_.data(), xq8_d_.data(), xq8_s_.data());
    } else {
      const int n_chunks = std::min(m, nt * 4);
      pool_->run(n_chunks, [&](int c, int) {
        quantize_act_rows(x, static_cast<int>(static_cast<long>(m) * c / n_chunks),
                          static_cast<int>(static_cast<long>(m) * (c + 1) / n_chunks), k, xq8_.data(),
                          xq8_d_.data(), xq8_s_.data());
      });
    }
    return {xq8_.data(), xq8_d_.data(), xq8_s_.data()};
  }
  void count(Op o) { counters_.add(op_name_[o]); }

  // A config this level's kernels would not run as given (clamped mr, rounded np) or an
  // fma path it lacks: refused where a weight gets its config, so nothing records it.
  void check_tiles(DType dtype, const TileConfig& cfg) const {
    check_tiles_run_as_given(isa_, dtype, cfg);
    check_fma_supported(blocking_from_config(cfg, dtype));
  }
  void check_fma_supported(const Blocking& blk) const {
    if (blk.fma && !k_.linear_bf16_fma)
      throw UsageError(std::string("cpu tile config: 'fma': 1 needs an AVX-512 level (this "
                                   "backend runs ") + isa_name(isa_) + ")");
  }

  // The A operand of a linear on weight view `v`, prepared once per call (a fused
  // multi-weight linear with one k can share it): fp32 weights read x [m][k] directly;
  // bf16 weights read x rounded to bf16 [m][kp] (odd tail zero), as uint16 for
  // vdpbf16ps / the emulation, or widened back to fp32 (exact) when `fma`. Large
  // inputs are converted on the pool. Sets *lda (elements); returns the buffer.
  // The fp32-FMA bf16 path is a prefill GEMM; the decode GEMV streams bf16 x. Every other
  // path accumulates each output element over k in the same order for any m (the k blocks
  // only move where the fp32 partial sums are stored), so batch-invariant mode only has to
  // keep the GEMM on the GEMV's vdpbf16ps / emulated sums.
  static bool uses_fma(const CpuLinear& w, int m, bool batch_invariant) {
    return w.view().type == PackedType::BF16 && w.blocking().fma && m > 1 && !batch_invariant;
  }

  // The kernel for a weight type (fma: the fp32-FMA bf16 GEMM).
  LinearFn linear_fn(PackedType t, bool fma) const {
    if (t == PackedType::BF16) return fma ? k_.linear_bf16_fma : k_.linear_bf16;
    return t == PackedType::F16 ? k_.linear_f16 : k_.linear_f32;
  }

  // fp32 / fp16 weights read fp32 x: in place when its row stride already spreads over
  // the L1D sets (a_row_stride) or there is one row, else copied at the padded stride.
  const float* prepare_a_f32(const float* x, int m, int k, int* lda) {
    *lda = a_row_stride(k, sizeof(float));
    if (m == 1 || *lda == k) {
      *lda = k;
      return x;
    }
    const std::size_t need = static_cast<std::size_t>(m) * *lda;
    if (xf_.size() < need) xf_.resize(need);
    for (int i = 0; i < m; ++i)
      std::memcpy(xf_.data() + static_cast<std::size_t>(i) * *lda,
                  x + static_cast<std::size_t>(i) * k, sizeof(float) * k);
    return xf_.data();
  }

  const void* prepare_a(const PackedView& v, bool fma, const float* x, int m, int* lda) {
    if (v.type != PackedType::BF16) return prepare_a_f32(x, m, v.k, lda);
    *lda = a_row_stride(v.kp, fma ? sizeof(float) : sizeof(uint16_t));
    const std::size_t need = static_cast<std::size_t>(m) * *lda;
    void* buf = nullptr;
    if (fma) {
      if (xf_.size() < need) xf_.resize(need);
      buf = xf_.data();
    } else {
      if (xb_.size() < need) xb_.resize(need);
      buf = xb_.data();
    }
    auto rows = [&](int r0, int r1) {
      if (fma) round_bf16_rows_f32(x, r0, r1, v.k, *lda, static_cast<float*>(buf));
      else round_bf16_rows(x, r0, r1, v.k, *lda, static_cast<uint16_t*>(buf));
    };
    const int nt = static_cast<double>(m) * v.k < (1 << 18) ? 1 : std::min(threads_, m);
    if (nt <= 1) {
      rows(0, m);
    } else {
      const int n_chunks = std::min(m, nt * 4);
      pool_->run(n_chunks, [&](int c, int) {
        rows(static_cast<int>(static_cast<long>(m) * c / n_chunks),
             static_cast<int>(static_cast<long>(m) * (c + 1) / n_chunks));
      });
    }
    return buf;
  }

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
  std::array<std::string, kNumOps> op_name_;  // "cpu/<isa>:<kernel>"
  int threads_ = 1;
  bool batch_invariant_ = false;      // set_batch_invariant: no fp32-FMA bf16 GEMM, one attention score path
  std::vector<uint16_t> xb_;          // [m][lda] x rounded to bf16 (lda = a_row_stride)
  std::vector<float> xf_;             // [m][lda] x rounded to bf16, widened to fp32 (fma), or x copied at a padded stride (fp32 / fp16 weights)
  std::vector<int8_t> xq8_;           // [m][k] x as q8 blocks (quantized weights, act 1)
  std::vector<float> xq8_d_;          // [m][k/32] their scales
  std::vector<int32_t> xq8_s_;        // [m][k/32] their sums
  std::vector<float> cs_;             // [m][head_dim/2][2] RoPE cos/sin
  std::vector<int> cs_pos_;           // [m] positions cs_ was computed for
  std::vector<float> cs_freq_;        // [head_dim/2] inv_freq cs_ was computed for
  std::vector<float> attn_scratch_;   // [threads][attn_scratch_floats]
  std::unique_ptr<WorkPool> pool_;    // persistent team of threads_ (caller included)
};

}  // namespace

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
