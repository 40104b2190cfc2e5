#include "registry/kernel_check.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"

namespace llmport::detail {

namespace {

std::vector<float> random_vec(std::size_t n, float scale, uint32_t seed, DType round) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  round_through(round, v.data(), v.data(), n);
  return v;
}

int dim(const KernelShape& s, const char* key) {
  auto it = s.find(key);
  if (it == s.end() || it->second <= 0)
    throw UsageError(std::string("kernel shape ") + shape_string(s) + " lacks '" + key + "'");
  return it->second;
}

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

void compare_into(CheckResult& r, const float* got, const float* want, std::size_t n,
                  double atol, double rtol) {
  double sum_d = 0, sum_ref = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = got[i], w = want[i], d = std::abs(g - w);
    if (!std::isfinite(g) || !(d <= atol + rtol * std::abs(w))) r.pass = false;
    if (std::isfinite(d)) {
      r.max_abs_err = std::max(r.max_abs_err, d);
      r.max_rel_err = std::max(r.max_rel_err, d / std::max(std::abs(w), atol));
    } else {
      r.max_abs_err = r.max_rel_err = INFINITY;
    }
    sum_d += d;
    sum_ref += std::abs(w);
  }
  r.mean_rel_l1 = sum_ref > 0 ? sum_d / sum_ref : sum_d;
  r.n_checked += static_cast<int>(n);
}

TensorView view_of(const std::vector<float>& w, int n, int k) {
  TensorView v;
  v.name = "random";
  v.dtype = DType::F32;
  v.shape = {n, k};
  v.data = w.data();
  v.nbytes = w.size() * 4;
  return v;
}

}  // namespace

void reconfigure_linear(LinearWeight& w, const TileConfig& cfg) {
  if (auto* c = dynamic_cast<cpu::CpuLinear*>(&w)) c->set_config(cfg);
}

CheckResult check_kernel(const std::string& kernel, const KernelShape& shape, DType dtype,
                         Backend& be, const TileConfig& cfg, int reps) {
  static const auto ref = make_backend("reference");
  const auto [atol, rtol] = kernel_tolerance(kernel, dtype);
  CheckResult r;
  const DType act_round = dtype;  // inputs rounded through the dtype: what a model feeds
  if (kernel == "gemm" || kernel == "gemv") {
    const int m = kernel == "gemv" ? 1 : dim(shape, "m");
    const int n = dim(shape, "n"), k = dim(shape, "k");
    // One-entry memo: a sweep checks many configs of one shape; the panel layout and the
    // reference output do not depend on the config, so pack and run the reference once.
    struct Memo {
      std::string key;
      std::vector<float> x, want;
      std::vector<int> rows;
      std::unique_ptr<LinearWeight> cw;
    };
    static Memo memo;
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}", static_cast<const void*>(&be), be.name() + be.isa(),
                                        kernel, shape_string(shape), dtype_name(dtype), m, n);
    if (memo.key != key) {
      memo = Memo{};
      const auto w = random_vec(static_cast<std::size_t>(n) * k,
                                1.0f / std::sqrt(static_cast<float>(k)), 1, DType::F32);
      // x on the bf16 grid for bf16 so the reference sees what the kernel multiplies.
      memo.x = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 2,
                          dtype == DType::BF16 ? DType::BF16 : DType::F32);
      memo.cw = be.make_linear(view_of(w, n, k), dtype, cfg);
      // The reference on up to 8 sampled rows (a row's result does not depend on m).
      auto rw = ref->make_linear(view_of(w, n, k), dtype);
      for (int i = 0; i < std::min(m, 8); ++i)
        memo.rows.push_back(m <= 8 ? i : static_cast<int>(static_cast<long>(i) * (m - 1) / 7));
      std::vector<float> xr;
      for (int i : memo.rows)
        xr.insert(xr.end(), memo.x.begin() + static_cast<long>(i) * k,
                  memo.x.begin() + static_cast<long>(i + 1) * k);
      memo.want.resize(memo.rows.size() * static_cast<std::size_t>(n));
      ref->linear(*rw, xr.data(), static_cast<int>(memo.rows.size()), memo.want.data());
      memo.key = key;
    }
    reconfigure_linear(*memo.cw, cfg);
    std::vector<float> y(static_cast<std::size_t>(m) * n);  // [m, n]
    be.linear(*memo.cw, memo.x.data(), m, y.data());
    std::vector<float> got;
    for (int i : memo.rows)
      got.insert(got.end(), y.begin() + static_cast<long>(i) * n, y.begin() + static_cast<long>(i + 1) * n);
    compare_into(r, got.data(), memo.want.data(), got.size(), atol, rtol);
    r.flops = 2.0 * m * n * k;
    r.bytes = static_cast<double>(memo.cw->bytes()) + 4.0 * m * (n + k);
    if (reps > 0) {
      be.linear(*memo.cw, memo.x.data(), m, y.data());  // warm
      r.seconds = best_time(reps, [&] { be.linear(*memo.cw, memo.x.data(), m, y.data()); });
    }
  } else if (kernel == "rmsnorm") {
    const int m = dim(shape, "m"), d = dim(shape, "dim");
    const auto x = random_vec(static_cast<std::size_t>(m) * d, 2.0f, 3, act_round);
    const auto w = random_vec(d, 1.0f, 4, act_round);
    std::vector<float> y(x.size()), yr(x.size());
    be.rmsnorm(x.data(), w.data(), y.data(), m, d, 1e-6f);
    ref->rmsnorm(x.data(), w.data(), yr.data(), m, d, 1e-6f);
    compare_into(r, y.data(), yr.data(), y.size(), atol, rtol);
    r.bytes = 8.0 * x.size();
    if (reps > 0) r.seconds = best_time(reps, [&] { be.rmsnorm(x.data(), w.data(), y.data(), m, d, 1e-6f); });
  } else if (kernel == "rope") {
    const int m = dim(shape, "m"), nh = dim(shape, "n_heads"), hd = dim(shape, "head_dim");
    const auto x = random_vec(static_cast<std::size_t>(m) * nh * hd, 1.0f, 5, act_round);
    std::vector<float> inv(hd / 2);
    for (int i = 0; i < hd / 2; ++i) inv[i] = static_cast<float>(std::pow(10000.0, -2.0 * i / hd));
    std::vector<int> pos(m);
    for (int t = 0; t < m; ++t) pos[t] = t * 7 + 3;
    std::vector<float> y = x, yr = x;
    be.rope(y.data(), m, nh, hd, pos.data(), inv.data());
    ref->rope(yr.data(), m, nh, hd, pos.data(), inv.data());
    compare_into(r, y.data(), yr.data(), y.size(), atol, rtol);
    r.bytes = 8.0 * x.size();
    if (reps > 0) r.seconds = best_time(reps, [&] { be.rope(y.data(), m, nh, hd, pos.data(), inv.data()); });
  } else if (kernel == "swiglu" || kernel == "add") {
    const int n = dim(shape, "n");
    const auto a = random_vec(n, 3.0f, 6, act_round), b = random_vec(n, 1.0f, 7, act_round);
    std::vector<float> y(n), yr(n);
    if (kernel == "swiglu") {
      be.swiglu(a.data(), b.data(), y.data(), n);
      ref->swiglu(a.data(), b.data(), yr.data(), n);
    } else {
      y = a;
      yr = a;
      be.add(y.data(), b.data(), n);
      ref->add(yr.data(), b.data(), n);
    }
    compare_into(r, y.data(), yr.data(), y.size(), atol, rtol);
    r.bytes = 12.0 * n;
    if (reps > 0) {
      std::vector<float> t = a;
      r.seconds = best_time(reps, [&] {
        if (kernel == "swiglu") be.swiglu(a.data(), b.data(), y.data(), n);
        else be.add(t.data(), b.data(), n);
      });
    }
  } else if (kernel == "attention_prefill" || kernel == "attention_decode") {
    const bool decode = kernel == "attention_decode";
    const int m = decode ? 1 : dim(shape, "m");
    const int ctx = decode ? dim(shape, "ctx") : m;
    const int nh = dim(shape, "n_heads"), nkv = dim(shape, "n_kv_heads"), hd = dim(shape, "head_dim");
    const int start = ctx - m, max_seq = ctx;
    const auto q = random_vec(static_cast<std::size_t>(m) * nh * hd, 1.0f, 8, act_round);
    const auto kc = random_vec(static_cast<std::size_t>(nkv) * max_seq * hd, 1.0f, 9, act_round);
    const auto vc = random_vec(static_cast<std::size_t>(nkv) * max_seq * hd, 1.0f, 10, act_round);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    std::vector<float> y(q.size()), yr(q.size());
    be.attention(q.data(), kc.data(), vc.data(), max_seq, start, m, nh, nkv, hd, scale, y.data());
    ref->attention(q.data(), kc.data(), vc.data(), max_seq, start, m, nh, nkv, hd, scale, yr.data());
    compare_into(r, y.data(), yr.data(), y.size(), atol, rtol);
    double pairs = 0;
    for (int t = 0; t < m; ++t) pairs += start + t + 1;
    r.flops = 4.0 * pairs * nh * hd;
    r.bytes = 8.0 * static_cast<double>(nkv) * ctx * hd + 8.0 * q.size();
    if (reps > 0)
      r.seconds = best_time(reps, [&] {
        be.attention(q.data(), kc.data(), vc.data(), max_seq, start, m, nh, nkv, hd, scale, y.data());
      });
  } else {
    throw UsageError("unknown kernel '" + kernel +
                     "' (expected gemm, gemv, rmsnorm, rope, swiglu, add, attention_prefill, "
                     "attention_decode)");
  }
  return r;
}

}  // namespace llmport::detail
