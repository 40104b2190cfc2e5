#include "registry/kernel_check.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"
#include "llmport/tolerance.hpp"

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

void compare_into(CheckResult& r, const float* got, const float* want, const float* scale,
                  std::size_t n, double tol) {
  ToleranceCheck c;
  c.tolerance = tol;
  check_tolerance(c, got, want, scale, n);
  r.pass = r.pass && c.pass;
  r.max_abs_err = std::max(r.max_abs_err, c.max_abs_err);
  r.max_rel_err = std::max(r.max_rel_err, c.max_rel_err);
  r.mean_rel_l1 = c.mean_rel_l1;
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
  CheckResult r;
  if (kernel == "gemm" || kernel == "gemv") {
    const int m = kernel == "gemv" ? 1 : dim(shape, "m");
    const int n = dim(shape, "n"), k = dim(shape, "k");
    // One-entry memo: a sweep checks many configs of one shape; the panel layout and the
    // reference output do not depend on the config, so pack and run the reference once.
    struct Memo {
      std::string key;
      std::vector<float> x, want, scale;
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
      // Per-element scale sum_j |x_j w_ij| (tolerance.hpp): the reference on |x|, |W|.
      std::vector<float> wa(w.size());
      for (std::size_t i = 0; i < w.size(); ++i) wa[i] = std::abs(w[i]);
      for (auto& v : xr) v = std::abs(v);
      auto ra = ref->make_linear(view_of(wa, n, k), dtype);
      memo.scale.resize(memo.want.size());
      ref->linear(*ra, xr.data(), static_cast<int>(memo.rows.size()), memo.scale.data());
      memo.key = key;
    }
    reconfigure_linear(*memo.cw, cfg);
    std::vector<float> y(static_cast<std::size_t>(m) * n);  // [m, n]
    be.linear(*memo.cw, memo.x.data(), m, y.data());
    std::vector<float> got;
    for (int i : memo.rows)
      got.insert(got.end(), y.begin() + static_cast<long>(i) * n, y.begin() + static_cast<long>(i + 1) * n);
    compare_into(r, got.data(), memo.want.data(), memo.scale.data(), got.size(), tolerance(kernel, dtype, k));
    r.flops = 2.0 * m * n * k;
    r.bytes = static_cast<double>(memo.cw->bytes()) + 4.0 * m * (n + k);
    if (reps > 0) {
      be.linear(*memo.cw, memo.x.data(), m, y.data());  // warm
      r.seconds = best_time(reps, [&] { be.linear(*memo.cw, memo.x.data(), m, y.data()); });
    }
  } else {
    throw UsageError("check_kernel: '" + kernel + "' is not a swept kernel (expected gemm, gemv); "
                     "validate_kernels checks the others");
  }
  return r;
}

}  // namespace llmport::detail
