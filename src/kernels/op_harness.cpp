// The op harness (llmport/op_harness.hpp): inputs per case, the reference's output and
// per-element scale, the backend's output in guarded buffers, the comparison, the memo.
// It talks to backends only through the Backend interface.
#include "llmport/op_harness.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <random>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "llmport/error.hpp"

namespace llmport {

namespace {

using Vec = std::vector<float>;

Vec random_vec(std::size_t n, float scale, uint32_t seed, DType round = DType::F32) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Vec v(n);
  for (auto& x : v) x = d(rng);
  round_through(round, v.data(), v.data(), n);
  return v;
}

Vec abs_of(const Vec& v) {
  Vec a(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) a[i] = std::abs(v[i]);
  return a;
}

int dim(const OpCase& c, const char* key) {
  auto it = c.shape.find(key);
  if (it == c.shape.end() || it->second < 0)
    throw UsageError(fmt::format("op harness: {} case lacks shape key '{}'", op_name(c.kind), key));
  return it->second;
}

bool is_linear(OpKind k) { return k == OpKind::Gemm || k == OpKind::Gemv || k == OpKind::LinearGroup; }

// Rows of x/y a linear case compares: every row, or ref_rows spread evenly over m.
std::vector<int> compared_rows(int m, int ref_rows) {
  std::vector<int> rows;
  const int n = ref_rows > 0 ? std::min(m, ref_rows) : m;
  for (int i = 0; i < n; ++i)
    rows.push_back(n == m ? i : static_cast<int>(static_cast<long>(i) * (m - 1) / std::max(1, n - 1)));
  return rows;
}

// The weights of a linear case: one, or n0, n1, ... of a group.
std::vector<int> linear_ns(const OpCase& c) {
  if (c.kind != OpKind::LinearGroup) return {dim(c, "n")};
  std::vector<int> ns;
  for (int i = 0; c.shape.count("n" + std::to_string(i)); ++i) ns.push_back(c.shape.at("n" + std::to_string(i)));
  if (ns.empty()) throw UsageError("op harness: linear_group case has no n0");
  return ns;
}

int linear_m(const OpCase& c) { return c.kind == OpKind::Gemv ? 1 : dim(c, "m"); }

// The tolerance's accumulation length of a case.
long accumulation_k(const OpCase& c) {
  switch (c.kind) {
    case OpKind::Gemm:
    case OpKind::Gemv:
    case OpKind::LinearGroup: return dim(c, "k") + (c.bias ? 1 : 0);
    case OpKind::RmsNorm: return dim(c, "dim") + 4;
    case OpKind::Rope:
    case OpKind::Swiglu: return 3;
    case OpKind::Add: return 1;
    case OpKind::AttentionPrefill:
    case OpKind::AttentionDecode: return dim(c, "ctx") + dim(c, "head_dim");
    case OpKind::GatherRows:
    case OpKind::Embedding:
    case OpKind::KvStore: return 0;
  }
  return 0;
}

// Activations on the weight dtype's grid where the backend multiplies in that dtype.
DType x_grid(DType dt) { return dt == DType::BF16 ? DType::BF16 : DType::F32; }

// The gathered rows: both ends, every 16-row panel boundary (up to 24 ids), then random.
std::vector<int> gather_ids(int m, int n, uint32_t seed) {
  std::vector<int> ids = {0, n - 1};
  for (int r = 15; r < n && ids.size() < 24; r += 16) ids.push_back(r);
  std::mt19937 rng(seed);
  while (static_cast<int>(ids.size()) < m) ids.push_back(static_cast<int>(rng() % n));
  ids.resize(static_cast<std::size_t>(m));
  return ids;
}

// n floats with guard words on both sides, the output pre-filled with NaN (an output the
// backend does not write fails the comparison).
class Guarded {
 public:
  static constexpr std::size_t kGuard = 16;
  static constexpr float kSentinel = -7.77e30f;
  explicit Guarded(std::size_t n, const float* init = nullptr) : n_(n), buf_(n + 2 * kGuard, kSentinel) {
    if (init) std::copy(init, init + n, data());
    else std::fill(data(), data() + n, NAN);
  }
  float* data() { return buf_.data() + kGuard; }
  bool intact() const {
    for (std::size_t i = 0; i < kGuard; ++i)
      if (buf_[i] != kSentinel || buf_[kGuard + n_ + i] != kSentinel) return false;
    return true;
  }

 private:
  std::size_t n_;
  Vec buf_;
};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
double best_time(int reps, F&& f) {
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    f();
    const double dt = now() - t0;
    if (r == 0 || dt < best) best = dt;
  }
  return best;
}

// ---- reference outputs and scales of the non-linear ops --------------------------------

struct Expected {
  Vec want, scale;
  Vec scale_q8;  ///< quantized linears: the scale under q8 activation blocks (op.hpp)
};

// (1 + 2 S) * sum_j p_j |v_j| per output element: S = max_j scale * sum_d |q_d k_jd| bounds
// how far a score error moves the softmax weights; sum_j p_j |v_j| is the attention of |V|.
Vec attention_scale(Backend& ref, AttentionArgs a, const Vec& v_cache) {
  const std::size_t qn = static_cast<std::size_t>(a.m) * a.n_heads * a.head_dim;
  Vec va = abs_of(v_cache), pv(qn), out(qn);
  a.v_cache = va.data();
  a.out = pv.data();
  ref.attention(a);
  const int group = a.n_heads / std::max(1, a.n_kv_heads);
  const int hd = a.head_dim;
  for (int t = 0; t < a.m; ++t)
    for (int h = 0; h < a.n_heads; ++h) {
      const float* qv = a.q + (static_cast<std::size_t>(t) * a.n_heads + h) * hd;
      const float* kh = a.k_cache + static_cast<std::size_t>(h / group) * a.kv_capacity * hd;
      double S = 0;
      for (int j = 0; j <= a.start_pos + t; ++j) {
        double s = 0;
        for (int d = 0; d < hd; ++d) s += std::abs(qv[d] * kh[static_cast<std::size_t>(j) * hd + d]);
        S = std::max(S, s * a.scale);
      }
      for (int d = 0; d < hd; ++d) {
        const std::size_t i = (static_cast<std::size_t>(t) * a.n_heads + h) * hd + d;
        out[i] = static_cast<float>((1.0 + 2.0 * S) * pv[i]);
      }
    }
  return out;
}

AttentionArgs attention_args(const OpCase& c, const OpInputs& in) {
  AttentionArgs a;
  a.m = c.kind == OpKind::AttentionDecode ? 1 : dim(c, "m");
  a.n_heads = dim(c, "n_heads");
  a.n_kv_heads = dim(c, "n_kv_heads");
  a.head_dim = dim(c, "head_dim");
  a.start_pos = dim(c, "ctx") - a.m;
  a.kv_capacity = in.kv_capacity;
  a.scale = in.attn_scale > 0 ? in.attn_scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  a.q = in.x.data();
  a.k_cache = in.k_cache.data();
  a.v_cache = in.v_cache.data();
  return a;
}

KvStoreArgs kv_args(const OpCase& c, const OpInputs& in, float* k_cache, float* v_cache) {
  KvStoreArgs a;
  a.m = dim(c, "m");
  a.pos = dim(c, "pos0");
  a.kv_capacity = a.pos + a.m;
  a.n_kv_heads = dim(c, "n_kv_heads");
  a.head_dim = dim(c, "head_dim");
  a.k = in.x.data();
  a.v = in.y.data();
  a.k_cache = k_cache;
  a.v_cache = v_cache;
  return a;
}

std::size_t kv_cache_size(const OpCase& c) {
  return static_cast<std::size_t>(dim(c, "n_kv_heads")) * (dim(c, "pos0") + dim(c, "m")) * dim(c, "head_dim");
}

// Runs a non-linear op on `be` into `out` (sized as the op's output); kv_store writes the K
// cache then the V cache into out (two halves).
void run_op(Backend& be, const OpCase& c, const OpInputs& in, float* out) {
  switch (c.kind) {
    case OpKind::RmsNorm: {
      const int m = dim(c, "m"), d = dim(c, "dim");
      if (c.in_place) {
        std::copy(in.x.begin(), in.x.end(), out);
        be.rmsnorm(out, in.w.at(0).data(), out, m, d, c.eps);
      } else {
        be.rmsnorm(in.x.data(), in.w.at(0).data(), out, m, d, c.eps);
      }
      return;
    }
    case OpKind::Rope:
      std::copy(in.x.begin(), in.x.end(), out);
      be.rope(out, dim(c, "m"), dim(c, "n_heads"), dim(c, "head_dim"), in.ids.data(), in.inv_freq.data());
      return;
    case OpKind::Swiglu: be.swiglu(in.x.data(), in.y.data(), out, in.x.size()); return;
    case OpKind::Add:
      std::copy(in.x.begin(), in.x.end(), out);
      be.add(out, in.y.data(), in.x.size());
      return;
    case OpKind::AttentionPrefill:
    case OpKind::AttentionDecode: {
      AttentionArgs a = attention_args(c, in);
      a.out = out;
      be.attention(a);
      return;
    }
    case OpKind::Embedding: {
      const TensorView table = TensorView::f32(in.w.at(0).data(), dim(c, "vocab"), dim(c, "dim"), "table");
      be.embedding(table, c.dtype, in.ids.data(), static_cast<int>(in.ids.size()), out);
      return;
    }
    case OpKind::KvStore: {
      const std::size_t n = kv_cache_size(c);
      std::fill(out, out + 2 * n, 0.0f);
      be.kv_store(kv_args(c, in, out, out + n));
      return;
    }
    default: throw UsageError("op harness: run_op of a linear");
  }
}

std::size_t output_size(const OpCase& c, const OpInputs& in) {
  switch (c.kind) {
    case OpKind::Embedding: return in.ids.size() * static_cast<std::size_t>(dim(c, "dim"));
    case OpKind::KvStore: return 2 * kv_cache_size(c);
    default: return in.x.size();
  }
}

Expected expected_of(Backend& ref, const OpCase& c, const OpInputs& in) {
  Expected e;
  e.want.resize(output_size(c, in));
  run_op(ref, c, in, e.want.data());
  switch (c.kind) {
    case OpKind::RmsNorm:  // every term of sum x^2 is positive: relative to |y|
    case OpKind::Swiglu: e.scale = abs_of(e.want); break;
    case OpKind::Rope: {  // |a| + |b| of the rotated pair (cos/sin are the same fp32 values)
      const int hd = dim(c, "head_dim"), half = hd / 2;
      e.scale.resize(in.x.size());
      for (std::size_t r = 0; r < in.x.size() / hd; ++r)
        for (int i = 0; i < half; ++i)
          e.scale[r * hd + i] = e.scale[r * hd + i + half] =
              std::abs(in.x[r * hd + i]) + std::abs(in.x[r * hd + i + half]);
      break;
    }
    case OpKind::Add:
      e.scale.resize(in.x.size());
      for (std::size_t i = 0; i < in.x.size(); ++i) e.scale[i] = std::abs(in.x[i]) + std::abs(in.y[i]);
      break;
    case OpKind::AttentionPrefill:
    case OpKind::AttentionDecode: e.scale = attention_scale(ref, attention_args(c, in), in.v_cache); break;
    default: e.scale.assign(e.want.size(), 0.0f);  // copies: exact
  }
  return e;
}

// ---- linears ------------------------------------------------------------------------

// x with every element replaced by the largest magnitude of its 32-block: |W| times it is
// sum_b amax_b sum_{t in b} |w_t|, the scale of a linear on q8 activation blocks.
Vec block_amax(const Vec& x) {
  Vec a(x.size());
  for (std::size_t b = 0; b + kQuantBlock <= x.size(); b += kQuantBlock) {
    float m = 0;
    for (int t = 0; t < kQuantBlock; ++t) m = std::max(m, std::abs(x[b + t]));
    std::fill(a.begin() + static_cast<long>(b), a.begin() + static_cast<long>(b) + kQuantBlock, m);
  }
  return a;
}

// The reference's y and scale sum_j |x_j w_ij| + |b_i| on the compared rows of x (and, for
// quantized weights, the q8-activation scale).
Expected linear_expected(Backend& ref, const LinearWeight& rw, const LinearWeight& rabs, const Vec& x,
                         int k, const std::vector<int>& rows, const float* bias, const float* abs_bias) {
  Vec xr;
  for (int i : rows) xr.insert(xr.end(), x.begin() + static_cast<long>(i) * k, x.begin() + static_cast<long>(i + 1) * k);
  const int mr = static_cast<int>(rows.size());
  Expected e;
  e.want.resize(static_cast<std::size_t>(mr) * rw.n_out);
  e.scale.resize(e.want.size());
  ref.linear(rw, xr.data(), mr, e.want.data(), bias);
  if (rw.quant != QuantType::None) {
    e.scale_q8.resize(e.want.size());
    const Vec xa = block_amax(xr);
    ref.linear(rabs, xa.data(), mr, e.scale_q8.data(), abs_bias);
  }
  for (auto& v : xr) v = std::abs(v);
  ref.linear(rabs, xr.data(), mr, e.scale.data(), abs_bias);
  return e;
}

// One weight of a linear case with everything derived from it.
struct Lin {
  Vec w, bias, abs_bias;
  // W, |W| (quantized: the dequantized values' magnitudes)
  std::map<std::pair<DType, QuantType>, std::pair<std::unique_ptr<LinearWeight>, std::unique_ptr<LinearWeight>>> ref;
  std::map<std::tuple<const Backend*, DType, QuantType>, std::unique_ptr<LinearWeight>> packed;
};

// W ~ N(0, 1/k) (a trained layer's scale) from `seed`, its bias N(0, 0.5) from seed + 100.
void fill_weight(Lin& l, int n, int k, uint32_t seed) {
  l.w = random_vec(static_cast<std::size_t>(n) * k, 1.0f / std::sqrt(static_cast<float>(k)), seed);
}
void fill_bias(Lin& l, Vec b) {
  l.bias = std::move(b);
  l.abs_bias = abs_of(l.bias);
}
Vec random_bias(int n, uint32_t seed) { return random_vec(n, 0.5f, seed + 100); }

std::pair<LinearWeight*, LinearWeight*> ref_weights(Backend& ref, Lin& l, int n, int k, DType dt,
                                                    QuantType q = QuantType::None) {
  auto& slot = l.ref[{dt, q}];
  if (!slot.first) {
    const TensorView w = TensorView::f32(l.w.data(), n, k);
    if (q == QuantType::None) {
      slot.first = ref.make_linear(w, dt);
      const Vec wa = abs_of(l.w);
      slot.second = ref.make_linear(TensorView::f32(wa.data(), n, k), dt);
    } else {
      slot.first = ref.make_quantized_linear(w, q);
      Vec wd(l.w.size());
      for (int r = 0; r < n; ++r)
        quantize_round_trip(q, l.w.data() + static_cast<std::size_t>(r) * k, wd.data() + static_cast<std::size_t>(r) * k, k);
      const Vec wa = abs_of(wd);
      slot.second = ref.make_linear(TensorView::f32(wa.data(), n, k), DType::F32);
    }
  }
  return {slot.first.get(), slot.second.get()};
}

LinearWeight& packed_weight(Backend& be, Lin& l, int n, int k, DType dt, const TileConfig& cfg,
                            QuantType q = QuantType::None) {
  auto& slot = l.packed[{&be, dt, q}];
  const TensorView w = TensorView::f32(l.w.data(), n, k);
  if (!slot) slot = q == QuantType::None ? be.make_linear(w, dt, cfg) : be.make_quantized_linear(w, q, cfg);
  else if (slot->config != cfg) be.retile(*slot, cfg);
  return *slot;
}

}  // namespace

// ---- the memo -------------------------------------------------------------------------

struct OpHarness::Memo {
  // Linear weights by (n, k, seed); x by (m, k, grid); reference rows by weight, dtype, m,
  // bias and compared rows.
  std::map<std::tuple<int, int, uint32_t>, std::unique_ptr<Lin>> lins;
  std::map<std::tuple<int, int, DType>, Vec> xs;
  std::map<std::tuple<const Lin*, DType, QuantType, int, bool, int>, Expected> lin_refs;
  // Other ops: inputs and reference by the case's identity.
  std::map<std::string, std::pair<OpInputs, Expected>> ops;
  // Other ops on explicit inputs: reference by the case's identity and the inputs' bytes,
  // so a test running one case on several ISAs computes the (slow, double) reference once.
  std::map<std::pair<std::string, std::size_t>, Expected> explicit_ops;
};

OpHarness::OpHarness() : ref_(make_backend("reference")), memo_(std::make_unique<Memo>()) {}
OpHarness::~OpHarness() = default;
void OpHarness::clear() { memo_ = std::make_unique<Memo>(); }

OpDesc op_desc(const OpCase& c) {
  return OpDesc{c.kind, c.dtype, c.shape, c.quant != QuantType::None ? kQuantBlock : 0, c.quant};
}

OpInputs OpHarness::make_inputs(const OpCase& c) {
  OpInputs in;
  const uint32_t s = c.seed;
  switch (c.kind) {
    case OpKind::Gemm:
    case OpKind::Gemv:
    case OpKind::LinearGroup: {
      const int k = dim(c, "k"), m = linear_m(c);
      const auto ns = linear_ns(c);
      for (std::size_t i = 0; i < ns.size(); ++i) {
        Lin l;
        fill_weight(l, ns[i], k, s + static_cast<uint32_t>(i));
        in.w.push_back(std::move(l.w));
        if (c.bias) in.bias.push_back(random_bias(ns[i], s + static_cast<uint32_t>(i)));
      }
      in.x = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 1000u + m * 7u + k, x_grid(c.dtype));
      break;
    }
    case OpKind::GatherRows: {
      const int n = dim(c, "n"), k = dim(c, "k");
      in.w.push_back(random_vec(static_cast<std::size_t>(n) * k, 1.0f / std::sqrt(static_cast<float>(k)), s));
      in.ids = gather_ids(dim(c, "m"), n, 31);
      break;
    }
    case OpKind::Embedding: {
      const int vocab = dim(c, "vocab");
      in.w.push_back(random_vec(static_cast<std::size_t>(vocab) * dim(c, "dim"), 1.0f, s));
      in.ids = gather_ids(dim(c, "m"), vocab, s + 1);
      break;
    }
    case OpKind::RmsNorm: {
      const int m = dim(c, "m"), d = dim(c, "dim");
      in.x = random_vec(static_cast<std::size_t>(m) * d, 2.0f, s);
      in.w.push_back(random_vec(d, 1.0f, s + 1, x_grid(c.dtype)));
      break;
    }
    case OpKind::Rope: {
      const int m = dim(c, "m"), hd = dim(c, "head_dim"), pos0 = dim(c, "pos0");
      in.x = random_vec(static_cast<std::size_t>(m) * dim(c, "n_heads") * hd, 1.0f, s);
      in.inv_freq.resize(hd / 2);
      for (int i = 0; i < hd / 2; ++i) in.inv_freq[i] = static_cast<float>(std::pow(c.rope_theta, -2.0 * i / hd));
      for (int t = 0; t < m; ++t) in.ids.push_back(pos0 + t);
      break;
    }
    case OpKind::Swiglu:
    case OpKind::Add:
      in.x = random_vec(dim(c, "n"), 3.0f, s);
      in.y = random_vec(dim(c, "n"), 1.0f, s + 1);
      break;
    case OpKind::AttentionPrefill:
    case OpKind::AttentionDecode: {
      const int m = c.kind == OpKind::AttentionDecode ? 1 : dim(c, "m"), ctx = dim(c, "ctx");
      const int nh = dim(c, "n_heads"), nkv = dim(c, "n_kv_heads"), hd = dim(c, "head_dim");
      in.kv_capacity = ctx;
      in.x = random_vec(static_cast<std::size_t>(m) * nh * hd, 1.0f, s);
      in.k_cache = random_vec(static_cast<std::size_t>(nkv) * ctx * hd, 1.0f, s + 1);
      in.v_cache = random_vec(static_cast<std::size_t>(nkv) * ctx * hd, 1.0f, s + 2);
      break;
    }
    case OpKind::KvStore: {
      const std::size_t n = static_cast<std::size_t>(dim(c, "m")) * dim(c, "n_kv_heads") * dim(c, "head_dim");
      in.x = random_vec(n, 1.0f, s);
      in.y = random_vec(n, 1.0f, s + 1);
      break;
    }
  }
  return in;
}

namespace {

// Compares the compared rows of a backend's linear output y [m, n] with the reference's
// (under the scale of the activations the backend multiplied).
void compare_rows(ToleranceCheck& acc, const float* y, int n, const std::vector<int>& rows, const Expected& e,
                  ActQuant act) {
  const Vec& scale = act == ActQuant::Q8 ? e.scale_q8 : e.scale;
  if (scale.size() != e.want.size()) throw UsageError("op harness: act 1 (q8 activations) on a float weight");
  for (std::size_t r = 0; r < rows.size(); ++r)
    check_tolerance(acc, y + static_cast<std::size_t>(rows[r]) * n, e.want.data() + r * n, scale.data() + r * n,
                    static_cast<std::size_t>(n));
}

// `part` (one weight of a group, its own tolerance) into `acc`: the worst ratio decides.
void merge_check(ToleranceCheck& acc, const ToleranceCheck& part, bool first) {
  if (first || part.ratio > acc.ratio) {
    acc.tolerance = part.tolerance;
    acc.ratio = part.ratio;
    acc.max_rel_err = part.max_rel_err;
  }
  if (acc.pass && !part.pass) acc.first_bad = acc.n_checked + part.first_bad;
  acc.pass = acc.pass && part.pass;
  acc.max_abs_err = std::max(acc.max_abs_err, part.max_abs_err);
  acc.sum_abs_err += part.sum_abs_err;
  acc.sum_abs_ref += part.sum_abs_ref;
  acc.n_checked += part.n_checked;
  acc.mean_rel_l1 = acc.sum_abs_ref > 0 ? acc.sum_abs_err / acc.sum_abs_ref : acc.sum_abs_err;
}

// A linear case on `be` given its weights' sources, x and the reference rows of each weight.
OpResult run_linear(Backend& be, const OpCase& c, const std::vector<Lin*>& lins, const Vec& x,
                    const std::vector<const Expected*>& refs, const std::vector<int>& rows, int reps) {
  const int m = linear_m(c), k = dim(c, "k");
  const auto ns = linear_ns(c);
  const TileConfig cfg = c.tiles.empty() ? be.default_tiles(op_desc(c)) : c.tiles;
  std::vector<LinearWeight*> ws;
  for (std::size_t i = 0; i < lins.size(); ++i) {
    const TileConfig& mine = i < c.member_tiles.size() && !c.member_tiles[i].empty() ? c.member_tiles[i] : cfg;
    ws.push_back(&packed_weight(be, *lins[i], ns[i], k, c.dtype, mine, c.quant));
  }
  std::vector<Guarded> ys;
  for (int n : ns) ys.emplace_back(static_cast<std::size_t>(m) * n);
  std::vector<LinearCall> calls;
  for (std::size_t i = 0; i < ws.size(); ++i)
    calls.push_back({ws[i], ys[i].data(), c.bias ? lins[i]->bias.data() : nullptr});
  auto call = [&] {
    if (c.kind == OpKind::LinearGroup) be.linear_group(calls, x.data(), m);
    else be.linear(*ws[0], x.data(), m, ys[0].data(), calls[0].bias);
  };
  call();
  OpResult r;
  r.k = accumulation_k(c);
  for (std::size_t i = 0; i < ws.size(); ++i) {
    // Each weight under the activations its own config names (act: quantized weights only).
    const ActQuant act = c.quant != QuantType::None ? act_of(ws[i]->config) : ActQuant::F32;
    ToleranceCheck part;
    part.tolerance = tolerance(c.kind, c.dtype, r.k, act);
    compare_rows(part, ys[i].data(), ns[i], rows, *refs[i], act);
    merge_check(r.check, part, i == 0);
    r.guards_intact = r.guards_intact && ys[i].intact();
  }
  // A quantized weight's one key (act) is its decode choice, used for every m.
  r.config = tile_subset(be.tile_schema(m == 1 || c.quant != QuantType::None ? OpKind::Gemv : OpKind::Gemm),
                         ws[0]->config);
  for (std::size_t i = 0; i < ws.size(); ++i) {
    r.flops += 2.0 * m * ns[i] * k;
    r.bytes += static_cast<double>(ws[i]->bytes()) + 4.0 * m * ns[i];
  }
  r.bytes += 4.0 * m * k;
  if (reps > 0) {
    call();  // warm
    r.seconds = best_time(reps, call);
  }
  return r;
}

// The config a gathered weight is packed with: the case's, else the backend's gemm default.
TileConfig gather_tiles(const Backend& be, const OpCase& c) {
  if (!c.tiles.empty()) return c.tiles;
  return be.default_tiles(OpDesc{OpKind::Gemm, c.dtype, {{"n", dim(c, "n")}, {"k", dim(c, "k")}}, 0});
}

std::string case_key(const OpCase& c) {
  std::string shape;
  for (const auto& [key, v] : c.shape) shape += key + "=" + std::to_string(v) + " ";
  return fmt::format("{}|{}|{}|{}|{}|{}|{}", op_name(c.kind), dtype_name(c.dtype), shape, c.seed, c.eps,
                     c.rope_theta, c.in_place);
}

// A hash of every byte of the inputs (NaN payloads included, which == on floats would not
// match) and of the sizes that delimit them.
std::size_t content_hash(const OpInputs& in) {
  std::size_t h = 0;
  auto mix = [&h](std::string_view bytes) {
    h ^= std::hash<std::string_view>{}(bytes) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  };
  auto add = [&mix](const auto& v) {
    const std::size_t n = v.size();
    mix(std::string_view(reinterpret_cast<const char*>(&n), sizeof n));
    mix(std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0])));
  };
  const std::array<std::size_t, 2> lists{in.w.size(), in.bias.size()};
  add(lists);
  for (const auto& w : in.w) add(w);
  for (const auto& b : in.bias) add(b);
  for (const auto* v : {&in.x, &in.y, &in.k_cache, &in.v_cache, &in.inv_freq}) add(*v);
  add(in.ids);
  const std::array<float, 2> scalars{static_cast<float>(in.kv_capacity), in.attn_scale};
  add(scalars);
  return h;
}

OpResult run_other(Backend& be, const OpCase& c, const OpInputs& in, const Expected& e, int reps) {
  Guarded got(e.want.size());
  auto call = [&] { run_op(be, c, in, got.data()); };
  call();
  OpResult r;
  r.k = accumulation_k(c);
  r.check.tolerance = tolerance(c.kind, c.dtype, r.k);
  check_tolerance(r.check, got.data(), e.want.data(), e.scale.data(), e.want.size());
  r.guards_intact = got.intact();
  if (reps > 0) r.seconds = best_time(reps, call);
  return r;
}

}  // namespace

OpResult OpHarness::run(Backend& be, const OpCase& c, int reps) {
  Memo& memo = *memo_;
  if (!is_linear(c.kind) && c.kind != OpKind::GatherRows) {
    auto& slot = memo.ops[case_key(c)];
    if (slot.second.want.empty()) {
      slot.first = make_inputs(c);
      slot.second = expected_of(*ref_, c, slot.first);
    }
    return run_other(be, c, slot.first, slot.second, reps);
  }
  const int k = dim(c, "k");
  const std::vector<int> ns = c.kind == OpKind::GatherRows ? std::vector<int>{dim(c, "n")} : linear_ns(c);
  std::vector<Lin*> lins;
  for (std::size_t i = 0; i < ns.size(); ++i) {
    auto& slot = memo.lins[{ns[i], k, c.seed + static_cast<uint32_t>(i)}];
    if (!slot) slot = std::make_unique<Lin>();
    const uint32_t seed = c.seed + static_cast<uint32_t>(i);
    if (slot->w.empty()) fill_weight(*slot, ns[i], k, seed);
    if (c.bias && slot->bias.empty()) fill_bias(*slot, random_bias(ns[i], seed));
    lins.push_back(slot.get());
  }
  if (c.kind == OpKind::GatherRows) {
    // The rows of the weight as the backend stores them vs the reference's copy: exact.
    const int m = dim(c, "m");
    const std::vector<int> ids = gather_ids(m, ns[0], 31);
    const auto [rw, rabs] = ref_weights(*ref_, *lins[0], ns[0], k, c.dtype);
    (void)rabs;
    Vec want(static_cast<std::size_t>(m) * k), scale(want.size(), 0.0f);
    ref_->gather_rows(*rw, ids.data(), m, want.data());
    LinearWeight& w = packed_weight(be, *lins[0], ns[0], k, c.dtype, gather_tiles(be, c));
    Guarded got(want.size());
    be.gather_rows(w, ids.data(), m, got.data());
    OpResult r;
    r.check.tolerance = tolerance(c.kind, c.dtype, 0);
    check_tolerance(r.check, got.data(), want.data(), scale.data(), want.size());
    r.guards_intact = got.intact();
    return r;
  }
  const int m = linear_m(c);
  const std::vector<int> rows = compared_rows(m, c.ref_rows);
  auto& x = memo.xs[{m, k, x_grid(c.dtype)}];
  if (x.empty()) x = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 1000u + m * 7u + k, x_grid(c.dtype));
  if (c.quant != QuantType::None && c.dtype != DType::F32)
    throw UsageError("op harness: a quantized case's dtype must be fp32");
  std::vector<const Expected*> refs;
  for (std::size_t i = 0; i < lins.size(); ++i) {
    auto& e = memo.lin_refs[{lins[i], c.dtype, c.quant, m, c.bias, c.ref_rows}];
    if (e.want.empty()) {
      const auto [rw, rabs] = ref_weights(*ref_, *lins[i], ns[i], k, c.dtype, c.quant);
      e = linear_expected(*ref_, *rw, *rabs, x, k, rows, c.bias ? lins[i]->bias.data() : nullptr,
                          c.bias ? lins[i]->abs_bias.data() : nullptr);
    }
    refs.push_back(&e);
  }
  return run_linear(be, c, lins, x, refs, rows, reps);
}

OpResult OpHarness::run(Backend& be, const OpCase& c, const OpInputs& in, int reps) {
  if (!is_linear(c.kind) && c.kind != OpKind::GatherRows) {
    Expected& e = memo_->explicit_ops[{case_key(c), content_hash(in)}];
    if (e.want.empty()) e = expected_of(*ref_, c, in);
    return run_other(be, c, in, e, reps);
  }
  const int k = dim(c, "k");
  const std::vector<int> ns = c.kind == OpKind::GatherRows ? std::vector<int>{dim(c, "n")} : linear_ns(c);
  if (in.w.size() != ns.size() || (c.bias && in.bias.size() != ns.size()))
    throw UsageError("op harness: " + std::string(op_name(c.kind)) + " inputs do not match the case's weights");
  std::vector<Lin> owned(ns.size());
  std::vector<Lin*> lins;
  for (std::size_t i = 0; i < ns.size(); ++i) {
    owned[i].w = in.w[i];
    if (c.bias) fill_bias(owned[i], in.bias[i]);
    lins.push_back(&owned[i]);
  }
  if (c.kind == OpKind::GatherRows) {
    const int m = static_cast<int>(in.ids.size());
    const auto [rw, rabs] = ref_weights(*ref_, owned[0], ns[0], k, c.dtype);
    (void)rabs;
    Vec want(static_cast<std::size_t>(m) * k), scale(want.size(), 0.0f);
    ref_->gather_rows(*rw, in.ids.data(), m, want.data());
    LinearWeight& w = packed_weight(be, owned[0], ns[0], k, c.dtype, gather_tiles(be, c));
    Guarded got(want.size());
    be.gather_rows(w, in.ids.data(), m, got.data());
    OpResult r;
    r.check.tolerance = 0;
    check_tolerance(r.check, got.data(), want.data(), scale.data(), want.size());
    r.guards_intact = got.intact();
    return r;
  }
  const int m = linear_m(c);
  const std::vector<int> rows = compared_rows(m, c.ref_rows);
  const Vec& x = in.x;
  std::vector<Expected> exp(ns.size());
  std::vector<const Expected*> refs;
  for (std::size_t i = 0; i < ns.size(); ++i) {
    const auto [rw, rabs] = ref_weights(*ref_, owned[i], ns[i], k, c.dtype, c.quant);
    exp[i] = linear_expected(*ref_, *rw, *rabs, x, k, rows, c.bias ? owned[i].bias.data() : nullptr,
                             c.bias ? owned[i].abs_bias.data() : nullptr);
    refs.push_back(&exp[i]);
  }
  return run_linear(be, c, lins, x, refs, rows, reps);
}

std::string describe(const OpCase& c, const OpResult& r) {
  std::string shape, cfg;
  for (const auto& [k, v] : c.shape) shape += (shape.empty() ? "" : " ") + k + "=" + std::to_string(v);
  for (const auto& [k, v] : r.config) cfg += (cfg.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return fmt::format("{}{} {} {} [{}]{}: max err/scale {:.3g}, tolerance {:.3g} (k={}), ratio {:.3g}, first bad {}, "
                     "{} elements{}",
                     c.label.empty() ? std::string(op_name(c.kind)) : c.label, c.path.empty() ? "" : " " + c.path,
                     c.quant != QuantType::None ? quant_name(c.quant) : dtype_name(c.dtype), shape, cfg.empty() ? "-" : cfg, c.bias ? " bias" : "", r.check.max_rel_err,
                     r.check.tolerance, r.k, r.check.ratio, r.check.first_bad, r.check.n_checked,
                     r.guards_intact ? "" : ", OUT-OF-BOUNDS WRITE");
}

std::vector<OpKind> uncovered_kinds(const Backend& be, std::span<const OpCase> cases,
                                    std::span<const OpKind> needed, DType dtype) {
  std::vector<OpKind> out;
  for (OpKind kind : needed) {
    const bool covered = std::any_of(cases.begin(), cases.end(), [&](const OpCase& c) { return c.kind == kind; });
    if (!covered && be.supports(OpDesc{kind, dtype, {}, 0})) out.push_back(kind);
  }
  return out;
}

std::vector<OpKind> uncovered_kinds(const Backend& be, std::span<const OpCase> cases,
                                    std::span<const OpKind> needed, DType dtype, QuantType quant) {
  std::vector<OpKind> out = uncovered_kinds(be, cases, needed, dtype);
  if (quant == QuantType::None) return out;
  for (OpKind kind : needed) {
    if (kind != OpKind::Gemm && kind != OpKind::Gemv) continue;
    const bool covered =
        std::any_of(cases.begin(), cases.end(), [&](const OpCase& c) { return c.kind == kind && c.quant == quant; });
    if (!covered && be.supports(OpDesc{kind, DType::F32, {}, kQuantBlock, quant})) out.push_back(kind);
  }
  return out;
}

std::vector<OpRun> run_cases(OpHarness& h, Backend& be, std::span<const OpCase> cases,
                             std::span<const OpKind> needed, DType dtype) {
  std::vector<OpRun> out;
  for (const OpCase& c : cases) out.push_back({&c, c.kind, h.run(be, c)});
  for (OpKind kind : uncovered_kinds(be, cases, needed, dtype)) out.push_back({nullptr, kind, OpResult{}});
  return out;
}

}  // namespace llmport
