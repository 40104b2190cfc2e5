#pragma once
// Shared helpers of the CPU-kernel tests: the tolerance table of issue 6, guarded output
// buffers that catch out-of-bounds writes, and deterministic random inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/dtype.hpp"
#include "llmport/kernels.hpp"
#include "llmport/weights.hpp"

namespace llmport::test {

struct Tol {
  double atol, rtol;
};
/// Tolerance of one op class for one dtype (issue 6 acceptance table).
inline Tol tol_for(const std::string& op, DType dt) {
  if (dt == DType::F32) return {1e-4, 1e-4};
  if (op == "gemv") return {1e-3, 1.6e-2};
  if (op == "gemm") return {1.5e-3, 1.6e-2};
  if (op == "swiglu") return {8e-2, 1.6e-2};
  if (op == "attention") return {1e-1, 1.6e-2};
  return {5e-2, 1.6e-2};  // rmsnorm, rope, add
}

/// n values + guard words on both sides, filled with a sentinel.
class Guarded {
 public:
  static constexpr std::size_t kGuard = 64;
  static constexpr float kSentinel = -7.77e30f;
  explicit Guarded(std::size_t n) : n_(n), buf_(n + 2 * kGuard, kSentinel) {}
  float* data() { return buf_.data() + kGuard; }
  const float* data() const { return buf_.data() + kGuard; }
  std::size_t size() const { return n_; }
  /// True when no guard word changed.
  bool guards_intact() const {
    for (std::size_t i = 0; i < kGuard; ++i)
      if (buf_[i] != kSentinel || buf_[kGuard + n_ + i] != kSentinel) return false;
    return true;
  }

 private:
  std::size_t n_;
  std::vector<float> buf_;
};

inline std::vector<float> random_vec(std::size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

/// Counts element-wise mismatches |got - want| > atol + rtol |want| and non-finite values;
/// reports the first few through ADD_FAILURE with `what`.
inline int compare(const float* got, const float* want, std::size_t n, Tol tol,
                   const std::string& what) {
  int bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = got[i], w = want[i];
    const bool ok = std::isfinite(g) && std::abs(g - w) <= tol.atol + tol.rtol * std::abs(w);
    if (!ok && ++bad <= 3)
      ADD_FAILURE() << what << " [" << i << "]: got " << g << " want " << w;
  }
  return bad;
}

/// An fp32 [n, k] weight over `w` (no file: packing never releases its pages).
inline TensorView view_of(const std::vector<float>& w, int n, int k) {
  TensorView v;
  v.dtype = DType::F32;
  v.shape = {n, k};
  v.data = w.data();
  v.nbytes = w.size() * 4;
  return v;
}

inline std::vector<cpu::Isa> isas_under_test() { return cpu::supported_isas(); }

}  // namespace llmport::test
