// `kernels validate` / deploy phase 1: every (kernel, shape, tile config) the engine
// dispatches vs the fp32 reference kernels fed the same inputs, every output element,
// tolerances from tolerance(op, dtype, k) (llmport/tolerance.hpp).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"
#include "llmport/registry.hpp"
#include "llmport/tolerance.hpp"
#include "registry/kernel_check.hpp"

namespace llmport {

TileConfig kernel_config_subset(const std::string& kernel, const TileConfig& cfg) {
  static const std::map<std::string, std::set<std::string>> keys = {
      {"gemm", {"mr", "np", "kc", "mc", "nc", "fma"}}, {"gemv", {"gnp"}}};
  TileConfig out;
  auto it = keys.find(kernel);
  if (it == keys.end()) return out;
  for (const auto& [k, v] : cfg)
    if (it->second.count(k)) out[k] = v;
  return out;
}

namespace {

/// a * b as an int, or UsageError naming the product (64-bit math: no overflow).
int checked_mul(long long a, long long b, const char* what) {
  const long long r = a * b;
  if (r > 2147483647LL)
    throw UsageError(std::string("kernels validate: ") + what + " = " + std::to_string(a) + " x " +
                     std::to_string(b) + " does not fit a 32-bit dimension (config.json sizes too large)");
  return static_cast<int>(r);
}

/// Bytes of the buffers a kernel check allocates (inputs, outputs, the reference copy), roughly.
long double check_bytes(const std::string& kernel, const KernelShape& s) {
  auto g = [&](const char* k) { return static_cast<long double>(s.count(k) ? s.at(k) : 1); };
  if (kernel == "gemm") return 4.0L * 3 * (g("n") * g("k") + g("m") * g("k") + g("m") * g("n"));
  if (kernel == "gemv") return 4.0L * 3 * (g("n") * g("k") + g("k") + g("n"));
  long double n = 1;
  for (const auto& [k, v] : s) n *= static_cast<long double>(v);
  return 4.0L * 4 * n;
}

// Every check allocates its buffers: a shape that needs more than the machine's memory is
// refused before the first allocation.
void check_fits_memory(const ModelConfig& cfg, int prefill_m) {
  const long double mem = static_cast<long double>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  for (const auto& [kernel, shape] : model_kernel_shapes(cfg, prefill_m))
    if (mem > 0 && check_bytes(kernel, shape) > mem / 2)
      throw UsageError("kernels validate: " + kernel + " " + shape_string(shape) + " needs about " +
                       std::to_string(static_cast<long long>(check_bytes(kernel, shape) / 1e9L)) +
                       " GB, more than half of this machine's " + std::to_string(static_cast<long long>(mem / 1e9L)) +
                       " GB (config.json sizes too large)");
}

}  // namespace

std::vector<std::pair<std::string, KernelShape>> model_kernel_shapes(const ModelConfig& cfg,
                                                                     int prefill_m) {
  const int P = std::max(1, prefill_m);
  const int hd = cfg.head_dim, nh = cfg.n_heads, nkv = cfg.n_kv_heads, e = cfg.emb_dim;
  const int q_dim = checked_mul(nh, hd, "num_attention_heads * head_dim");
  const int kv_dim = checked_mul(nkv, hd, "num_key_value_heads * head_dim");
  checked_mul(P, nh, "prefill rows * num_attention_heads");
  checked_mul(P, cfg.hidden_dim, "prefill rows * intermediate_size");
  checked_mul(P, e, "prefill rows * hidden_size");
  std::vector<std::pair<std::string, KernelShape>> out;
  std::set<std::pair<int, int>> linears = {{q_dim, e}, {kv_dim, e}, {e, q_dim},
                                           {cfg.hidden_dim, e}, {e, cfg.hidden_dim},
                                           {cfg.vocab_size, e}};
  for (const auto& [n, k] : linears) {
    out.push_back({"gemm", {{"m", P}, {"n", n}, {"k", k}}});
    out.push_back({"gemv", {{"n", n}, {"k", k}}});
  }
  for (int m : {P, 1}) {
    out.push_back({"rmsnorm", {{"m", m}, {"dim", e}}});
    if (cfg.qk_norm) out.push_back({"rmsnorm", {{"m", m * nh}, {"dim", hd}}});
    out.push_back({"rope", {{"m", m}, {"n_heads", nh}, {"head_dim", hd}}});
    if (nkv != nh) out.push_back({"rope", {{"m", m}, {"n_heads", nkv}, {"head_dim", hd}}});
    out.push_back({"swiglu", {{"n", m * cfg.hidden_dim}}});
    out.push_back({"add", {{"n", m * e}}});
  }
  out.push_back({"attention_prefill", {{"m", P}, {"n_heads", nh}, {"n_kv_heads", nkv}, {"head_dim", hd}}});
  out.push_back({"attention_decode", {{"ctx", P}, {"n_heads", nh}, {"n_kv_heads", nkv}, {"head_dim", hd}}});
  return out;
}

namespace {

using Vec = std::vector<float>;

Vec random_vec(std::size_t n, float scale, uint32_t seed, DType round) {
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

TensorView view_of(const Vec& w, int n, int k) {
  TensorView v;
  v.name = "random";
  v.dtype = DType::F32;
  v.shape = {n, k};
  v.data = w.data();
  v.nbytes = w.size() * 4;
  return v;
}

// One random linear W [n, k] (N(0, 1/k), as a trained layer's scale) with its bias, and
// the reference's packed copies of W and |W| (for the per-element scale).
struct Lin {
  int n = 0, k = 0;
  Vec w, bias, abs_bias;
  std::unique_ptr<LinearWeight> ref_w, ref_abs;
};

// Reference outputs of every (weight, m, bias) asked, kept for all backends checked.
struct RefCache {
  std::map<std::tuple<const Lin*, int, bool>, std::pair<Vec, Vec>> out;  // (y, scale)
};

class Validator {
 public:
  Validator(const ModelConfig& cfg, DType dtype, std::span<Backend* const> backends,
            KernelSelection* sel, int prefill_m)
      : cfg_(cfg), dt_(dtype), backends_(backends.begin(), backends.end()), sel_(sel),
        ref_(make_backend("reference")) {
    P_ = std::max(1, prefill_m);
    // A second prefill m: small and odd (tails of the mr/mc blocking); P itself when tiny.
    m2_ = P_ > 8 ? 7 : std::max(1, P_ - (P_ % 2 == 0 ? 1 : 0));
    if (m2_ == P_ && P_ > 2) m2_ = P_ - 2;
    x_round_ = dtype == DType::BF16 ? DType::BF16 : DType::F32;
  }

  std::vector<ValidationRow> run() {
    const int hd = cfg_.head_dim, nh = cfg_.n_heads, nkv = cfg_.n_kv_heads, e = cfg_.emb_dim;
    const int hid = cfg_.hidden_dim;
    Lin& wq = lin(nh * hd, e, cfg_.qkv_bias, 11);
    Lin& wk = lin(nkv * hd, e, cfg_.qkv_bias, 12);
    Lin& wv = lin(nkv * hd, e, cfg_.qkv_bias, 13);
    Lin& wo = lin(e, nh * hd, cfg_.o_bias, 14);
    Lin& wg = lin(hid, e, false, 15);
    Lin& wu = lin(hid, e, false, 16);
    Lin& wd = lin(e, hid, false, 17);
    Lin& wl = lin(cfg_.vocab_size, e, false, 18);
    std::vector<int> ms = {P_};
    if (m2_ != P_) ms.push_back(m2_);
    ms.push_back(1);
    // Single linears (o_proj with its bias when the model has one, down, lm_head).
    for (int m : ms) {
      linear_row("o_proj", wo, m, cfg_.o_bias);
      linear_row("down_proj", wd, m, false);
      // lm_head: the engine runs it on the rows whose logits it returns; a prefill of
      // every row only when the product stays small (bounded cost of the scalar reference).
      if (m == 1 || m == m2_ || static_cast<double>(m) * wl.n * wl.k <= 64e6) linear_row("lm_head", wl, m, false);
      // The fused groups as the engine calls them (one linear_group per layer each).
      group_row("linear_group_qkv", {&wq, &wk, &wv}, m, cfg_.qkv_bias);
      group_row("linear_group_gate_up", {&wg, &wu}, m, false);
    }
    // Each q/k/v/gate/up shape also on its own (gemm/gemv, e.g. a sweep's measurements).
    for (Lin* l : {&wq, &wk, &wg})
      for (int m : ms) linear_row("", *l, m, false);
    if (cfg_.tie_word_embeddings) gather_row(wl);
    for (int m : {P_, 1}) {
      rmsnorm_row(m, e, 21);
      if (cfg_.qk_norm) rmsnorm_row(m * nh, hd, 22);
      rope_row(m, nh, hd, m == 1 ? P_ : 0);
      if (nkv != nh) rope_row(m, nkv, hd, m == 1 ? P_ : 0);
      elementwise_row("swiglu", static_cast<std::size_t>(m) * hid);
      elementwise_row("add", static_cast<std::size_t>(m) * e);
    }
    // Attention: prefill from position 0 and after a cached prefix; decode at two contexts.
    attention_row(P_, 0, nh, nkv, hd);
    if (P_ > 2) attention_row(m2_ < P_ ? m2_ : 1, P_ - (m2_ < P_ ? m2_ : 1), nh, nkv, hd);
    attention_row(1, P_ - 1, nh, nkv, hd);
    attention_row(1, P_ + P_ / 2 + 1, nh, nkv, hd);
    return std::move(rows_);
  }

 private:
  Lin& lin(int n, int k, bool bias, uint32_t seed) {
    auto key = std::make_tuple(n, k, bias, seed);
    auto& slot = lins_[key];
    if (slot) return *slot;
    slot = std::make_unique<Lin>();
    Lin& l = *slot;
    l.n = n;
    l.k = k;
    l.w = random_vec(static_cast<std::size_t>(n) * k, 1.0f / std::sqrt(static_cast<float>(k)), seed, DType::F32);
    if (bias) {
      l.bias = random_vec(n, 0.5f, seed + 100, DType::F32);
      l.abs_bias = abs_of(l.bias);
    }
    l.ref_w = ref_->make_linear(view_of(l.w, n, k), dt_);
    const Vec wa = abs_of(l.w);
    l.ref_abs = ref_->make_linear(view_of(wa, n, k), dt_);
    return l;
  }

  const Vec& x_for(int m, int k) {
    auto& v = xs_[{m, k}];
    if (v.empty()) v = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 1000u + m * 7u + k, x_round_);
    return v;
  }

  const std::pair<Vec, Vec>& reference(const Lin& l, int m, bool bias) {
    auto& slot = refs_.out[{&l, m, bias}];
    if (!slot.first.empty()) return slot;
    const Vec& x = x_for(m, l.k);
    slot.first.resize(static_cast<std::size_t>(m) * l.n);
    slot.second.resize(slot.first.size());
    ref_->linear(*l.ref_w, x.data(), m, slot.first.data(), bias ? l.bias.data() : nullptr);
    const Vec xa = abs_of(x);
    ref_->linear(*l.ref_abs, xa.data(), m, slot.second.data(), bias ? l.abs_bias.data() : nullptr);
    return slot;
  }

  TileConfig config_for(Backend& be, int n, int k) {
    if (be.name() != "cpu") return {};
    return sel_ ? sel_->linear_config(be, n, k, dt_)
                : cpu::default_tile_config(cpu::parse_isa(be.isa()), dt_, n, k);
  }

  // The backend's packed copy of `l` (one per backend and weight).
  LinearWeight& packed(Backend& be, const Lin& l) {
    auto& slot = packed_[{&be, &l}];
    if (!slot) slot = be.make_linear(view_of(l.w, l.n, l.k), dt_, config_for(be, l.n, l.k));
    return *slot;
  }

  void push(const std::string& kernel, Backend& be, KernelShape shape, const TileConfig& tc,
            long k, const ToleranceCheck& c, const std::string& path = "") {
    ValidationRow row;
    row.kernel = kernel;
    row.path = path;
    row.isa = be.isa();
    row.shape = std::move(shape);
    row.config = tc;
    row.k = static_cast<int>(k);
    row.max_abs_err = c.max_abs_err;
    row.max_rel_err = c.max_rel_err;
    row.mean_rel_l1 = c.mean_rel_l1;
    row.tolerance = c.tolerance;
    row.ratio = c.ratio;
    row.pass = c.pass && c.n_checked > 0;
    row.n_checked = c.n_checked;
    rows_.push_back(row);
  }

  static TileConfig linear_subset(const TileConfig& tc, int m) {
    return kernel_config_subset(m == 1 ? "gemv" : "gemm", tc);
  }

  void linear_row(const std::string& what, const Lin& l, int m, bool bias) {
    const auto& [want, scale] = reference(l, m, bias);
    const Vec& x = x_for(m, l.k);
    const std::string kernel = m == 1 ? "gemv" : "gemm";
    const long k = l.k + (bias ? 1 : 0);
    for (Backend* be : backends_) {
      LinearWeight& w = packed(*be, l);
      Vec y(want.size());
      be->linear(w, x.data(), m, y.data(), bias ? l.bias.data() : nullptr);
      ToleranceCheck c;
      c.tolerance = tolerance(kernel, dt_, k);
      check_tolerance(c, y.data(), want.data(), scale.data(), y.size());
      KernelShape shape = m == 1 ? KernelShape{{"n", l.n}, {"k", l.k}} : KernelShape{{"m", m}, {"n", l.n}, {"k", l.k}};
      if (bias) shape["bias"] = 1;
      push(kernel, *be, shape, linear_subset(w.config, m), k, c, what);
    }
  }

  void group_row(const std::string& kernel, std::vector<const Lin*> ls, int m, bool bias) {
    const int k_in = ls.front()->k;
    const Vec& x = x_for(m, k_in);
    const long k = k_in + (bias ? 1 : 0);
    for (Backend* be : backends_) {
      std::vector<Vec> ys;
      std::vector<LinearCall> calls;
      for (const Lin* l : ls) ys.emplace_back(static_cast<std::size_t>(m) * l->n, NAN);
      for (std::size_t i = 0; i < ls.size(); ++i)
        calls.push_back({&packed(*be, *ls[i]), ys[i].data(), bias ? ls[i]->bias.data() : nullptr});
      be->linear_group(calls, x.data(), m);
      ToleranceCheck c;
      c.tolerance = tolerance("linear_group", dt_, k);
      KernelShape shape{{"m", m}, {"k", k_in}};
      for (std::size_t i = 0; i < ls.size(); ++i) {
        const auto& [want, scale] = reference(*ls[i], m, bias);
        check_tolerance(c, ys[i].data(), want.data(), scale.data(), want.size());
        shape["n" + std::to_string(i)] = ls[i]->n;
      }
      if (bias) shape["bias"] = 1;
      push(kernel, *be, shape, linear_subset(calls.front().w->config, m), k, c);
    }
  }

  void gather_row(const Lin& l) {
    // The tied lm_head's rows as embeddings: every panel boundary and random ids, each row
    // in full, against the reference's copy of the same rounded values.
    std::vector<int> ids = {0, l.n - 1};
    for (int r = 15; r < l.n && ids.size() < 24; r += 16) ids.push_back(r);
    std::mt19937 rng(31);
    while (static_cast<int>(ids.size()) < std::min(P_, 4096)) ids.push_back(static_cast<int>(rng() % l.n));
    const int m = static_cast<int>(ids.size());
    Vec want(static_cast<std::size_t>(m) * l.k), scale(want.size(), 0.0f);
    ref_->gather_rows(*l.ref_w, ids.data(), m, want.data());
    for (Backend* be : backends_) {
      Vec got(want.size());
      be->gather_rows(packed(*be, l), ids.data(), m, got.data());
      ToleranceCheck c;
      c.tolerance = tolerance("gather_rows", dt_, 0);
      check_tolerance(c, got.data(), want.data(), scale.data(), got.size());
      push("gather_rows", *be, {{"m", m}, {"n", l.n}, {"k", l.k}}, {}, 0, c);
    }
  }

  void rmsnorm_row(int m, int dim, uint32_t seed) {
    const Vec x = random_vec(static_cast<std::size_t>(m) * dim, 2.0f, seed, DType::F32);
    const Vec w = random_vec(dim, 1.0f, seed + 1, x_round_);
    Vec want(x.size());
    ref_->rmsnorm(x.data(), w.data(), want.data(), m, dim, 1e-6f);
    const Vec scale = abs_of(want);  // every term of sum x^2 is positive: relative bound
    for (Backend* be : backends_) {
      Vec y(x.size());
      be->rmsnorm(x.data(), w.data(), y.data(), m, dim, 1e-6f);
      ToleranceCheck c;
      c.tolerance = tolerance("rmsnorm", dt_, dim + 4);
      check_tolerance(c, y.data(), want.data(), scale.data(), y.size());
      push("rmsnorm", *be, {{"m", m}, {"dim", dim}}, {}, dim + 4, c);
    }
  }

  void rope_row(int m, int n_heads, int hd, int start) {
    const Vec x = random_vec(static_cast<std::size_t>(m) * n_heads * hd, 1.0f, 41 + n_heads, DType::F32);
    Vec inv(hd / 2);
    for (int i = 0; i < hd / 2; ++i)
      inv[i] = static_cast<float>(std::pow(cfg_.rope_theta > 0 ? cfg_.rope_theta : 10000.0, -2.0 * i / hd));
    std::vector<int> pos(m);
    for (int t = 0; t < m; ++t) pos[t] = start + t;
    Vec want = x;
    ref_->rope(want.data(), m, n_heads, hd, pos.data(), inv.data());
    Vec scale(x.size());  // |a| + |b| of the rotated pair
    const int half = hd / 2;
    for (std::size_t r = 0; r < x.size() / hd; ++r)
      for (int i = 0; i < half; ++i) {
        const float s = std::abs(x[r * hd + i]) + std::abs(x[r * hd + i + half]);
        scale[r * hd + i] = scale[r * hd + i + half] = s;
      }
    for (Backend* be : backends_) {
      Vec y = x;
      be->rope(y.data(), m, n_heads, hd, pos.data(), inv.data());
      ToleranceCheck c;
      c.tolerance = tolerance("rope", dt_, 3);
      check_tolerance(c, y.data(), want.data(), scale.data(), y.size());
      push("rope", *be, {{"m", m}, {"n_heads", n_heads}, {"head_dim", hd}, {"pos0", start}}, {}, 3, c);
    }
  }

  void elementwise_row(const std::string& op, std::size_t n) {
    const Vec a = random_vec(n, 3.0f, 51, DType::F32), b = random_vec(n, 1.0f, 52, DType::F32);
    Vec want(n), scale(n);
    const long k = op == "add" ? 1 : 3;
    if (op == "swiglu") {
      ref_->swiglu(a.data(), b.data(), want.data(), n);
      scale = abs_of(want);
    } else {
      want = a;
      ref_->add(want.data(), b.data(), n);
      for (std::size_t i = 0; i < n; ++i) scale[i] = std::abs(a[i]) + std::abs(b[i]);
    }
    for (Backend* be : backends_) {
      Vec y(n);
      if (op == "swiglu") {
        be->swiglu(a.data(), b.data(), y.data(), n);
      } else {
        y = a;
        be->add(y.data(), b.data(), n);
      }
      ToleranceCheck c;
      c.tolerance = tolerance(op, dt_, k);
      check_tolerance(c, y.data(), want.data(), scale.data(), n);
      push(op, *be, {{"n", static_cast<int>(n)}}, {}, k, c);
    }
  }

  void attention_row(int m, int start, int nh, int nkv, int hd) {
    const int ctx = start + m, max_seq = ctx;
    const Vec q = random_vec(static_cast<std::size_t>(m) * nh * hd, 1.0f, 61, DType::F32);
    const Vec kc = random_vec(static_cast<std::size_t>(nkv) * max_seq * hd, 1.0f, 62, DType::F32);
    const Vec vc = random_vec(static_cast<std::size_t>(nkv) * max_seq * hd, 1.0f, 63, DType::F32);
    const float sc = 1.0f / std::sqrt(static_cast<float>(hd));
    Vec want(q.size()), pv(q.size());
    ref_->attention({.q = q.data(), .k_cache = kc.data(), .v_cache = vc.data(), .kv_capacity = max_seq, .start_pos = start, .m = m, .n_heads = nh, .n_kv_heads = nkv, .head_dim = hd, .scale = sc, .out = want.data()});
    // scale = (1 + 2 S) * sum_j p_j |v_j|: S = max_j scale * sum_d |q_d k_jd| bounds how far a
    // score error moves the softmax weights; sum_j p_j |v_j| is the attention of |V|.
    const Vec va = abs_of(vc);
    ref_->attention({.q = q.data(), .k_cache = kc.data(), .v_cache = va.data(), .kv_capacity = max_seq, .start_pos = start, .m = m, .n_heads = nh, .n_kv_heads = nkv, .head_dim = hd, .scale = sc, .out = pv.data()});
    Vec scale(q.size());
    const int group = nh / nkv;
    for (int t = 0; t < m; ++t)
      for (int h = 0; h < nh; ++h) {
        const float* qv = q.data() + (static_cast<std::size_t>(t) * nh + h) * hd;
        const float* kh = kc.data() + static_cast<std::size_t>(h / group) * max_seq * hd;
        double S = 0;
        for (int j = 0; j <= start + t; ++j) {
          double s = 0;
          for (int d = 0; d < hd; ++d) s += std::abs(qv[d] * kh[static_cast<std::size_t>(j) * hd + d]);
          S = std::max(S, s * sc);
        }
        for (int d = 0; d < hd; ++d) {
          const std::size_t i = (static_cast<std::size_t>(t) * nh + h) * hd + d;
          scale[i] = static_cast<float>((1.0 + 2.0 * S) * pv[i]);
        }
      }
    const std::string op = m == 1 ? "attention_decode" : "attention_prefill";
    const long k = ctx + hd;
    for (Backend* be : backends_) {
      Vec y(q.size());
      be->attention({.q = q.data(), .k_cache = kc.data(), .v_cache = vc.data(), .kv_capacity = max_seq, .start_pos = start, .m = m, .n_heads = nh, .n_kv_heads = nkv, .head_dim = hd, .scale = sc, .out = y.data()});
      ToleranceCheck c;
      c.tolerance = tolerance(op, dt_, k);
      check_tolerance(c, y.data(), want.data(), scale.data(), y.size());
      KernelShape shape{{"n_heads", nh}, {"n_kv_heads", nkv}, {"head_dim", hd}, {"ctx", ctx}};
      if (m > 1) shape["m"] = m;
      push(op, *be, shape, {}, k, c);
    }
  }

  const ModelConfig& cfg_;
  DType dt_;
  DType x_round_;
  std::vector<Backend*> backends_;
  KernelSelection* sel_;
  std::unique_ptr<Backend> ref_;
  int P_ = 1, m2_ = 1;
  std::map<std::tuple<int, int, bool, uint32_t>, std::unique_ptr<Lin>> lins_;
  std::map<std::pair<int, int>, Vec> xs_;
  RefCache refs_;
  std::map<std::pair<const Backend*, const Lin*>, std::unique_ptr<LinearWeight>> packed_;
  std::vector<ValidationRow> rows_;
};

}  // namespace

std::vector<ValidationRow> validate_kernels(const ModelConfig& cfg, DType dtype,
                                            std::span<Backend* const> backends,
                                            KernelSelection* sel, int prefill_m) {
  check_fits_memory(cfg, prefill_m);
  return Validator(cfg, dtype, backends, sel, prefill_m).run();
}

std::vector<ValidationRow> validate_kernels(const ModelConfig& cfg, DType dtype, Backend& backend,
                                            KernelSelection* sel, int prefill_m) {
  Backend* one[1] = {&backend};
  return validate_kernels(cfg, dtype, std::span<Backend* const>(one, 1), sel, prefill_m);
}

std::string validation_row_string(const ValidationRow& r) {
  std::string cfg;
  for (const auto& [k, v] : r.config) cfg += (cfg.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return fmt::format("{}{} ({}) {} [{}]: max err/scale {:.3g}, tolerance {:.3g} (k={}), ratio {:.3g}, "
                     "max abs err {:.3g}, {} elements",
                     r.kernel, r.path.empty() ? "" : " " + r.path, r.isa, shape_string(r.shape),
                     cfg.empty() ? "-" : cfg, r.max_rel_err, r.tolerance, r.k, r.ratio, r.max_abs_err,
                     r.n_checked);
}

void record_validation(const std::vector<ValidationRow>& rows, DType dtype, const std::string& isa,
                       KernelRegistry& registry, const std::string& model_name, int threads) {
  const std::string dt(dtype_name(dtype));
  static const std::set<std::string> recorded = {"gemm", "gemv", "rmsnorm", "rope", "swiglu", "add",
                                                 "attention_prefill", "attention_decode"};
  const MachineFingerprint here = MachineFingerprint::current(threads);
  for (const auto& row : rows) {
    // Registry entries are per (kernel, shape) of this backend's ISA; rows of the fused
    // paths, the gather and other ISA levels are in the phase report only.
    if (!recorded.count(row.kernel) || !row.path.empty() || (!row.isa.empty() && row.isa != isa) ||
        row.shape.count("bias") || row.shape.count("pos0"))
      continue;
    RegistryEntry e;
    if (const auto* old = registry.find(row.kernel, dt, isa, row.shape, here)) e = *old;
    e.kernel = row.kernel;
    e.dtype = dt;
    e.isa = isa;
    e.shape = row.shape;
    bool have = false;
    for (auto& c : e.candidates)
      if (c.config == row.config) {
        c.mean_rel_l1 = row.mean_rel_l1;
        c.max_abs_err = row.max_abs_err;
        c.pass = row.pass;
        have = true;
      }
    if (!have) {
      Candidate c;
      c.config = row.config;
      c.mean_rel_l1 = row.mean_rel_l1;
      c.max_abs_err = row.max_abs_err;
      c.pass = row.pass;
      e.candidates.push_back(c);
    }
    if (e.best.empty() || e.best == row.config) {
      e.heuristic = e.best.empty() ? true : e.heuristic;
      e.best = row.config;
    }
    e.validated = row.pass && e.best == row.config;
    e.used_by = {model_name};
    if (e.provenance.fingerprint.empty()) e.provenance = Provenance::current(threads);
    registry.record(e);
  }
}

}  // namespace llmport
