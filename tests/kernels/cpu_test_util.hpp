#pragma once
// Shared helpers of the CPU-kernel tests: guarded output buffers that catch out-of-bounds
// writes and deterministic random inputs. Comparisons with the reference backend go through
// the op harness (llmport/op_harness.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/dtype.hpp"
#include "llmport/kernels.hpp"
#include "llmport/tolerance.hpp"
#include "llmport/weights.hpp"

namespace llmport::test {

/// |v| element-wise.
/// True when the n floats at a and b are the same bits (NaN payloads and signed zeros
/// included): the test of batch- and thread-invariance.
inline bool same_bits(const float* a, const float* b, std::size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

inline std::vector<float> abs_of(const float* v, std::size_t n) {
  std::vector<float> a(n);
  for (std::size_t i = 0; i < n; ++i) a[i] = std::abs(v[i]);
  return a;
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
