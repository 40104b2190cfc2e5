// The rounding-noise oracle's perturbations (reference_ops.hpp): each value moves by at
// most half its block's step, the errors are uniform (mean 0, variance step^2 / 12, the
// quantization-noise model) and independent of the quantizer, and the draws are the
// same for the same seed.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/reference/reference_ops.hpp"
#include "llmport/quant.hpp"

namespace llmport {
namespace {

// Values of every magnitude, a block's largest first (so its step is known: |x0| / levels).
std::vector<float> ramp(int n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = (i % 32 == 0 ? 3.0f : std::sin(0.7f * i)) * (1 + i / 32 % 5);
  return x;
}

void expect_rounding_noise(QuantType q, float levels) {
  const int n = 32 * 8192;
  const std::vector<float> x = ramp(n);
  std::vector<float> y = x;
  reference::add_weight_rounding_noise(q, y.data(), n, 7);
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double step = std::abs(x[static_cast<std::size_t>(i / 32 * 32)]) / levels;
    const double e = (y[static_cast<std::size_t>(i)] - x[static_cast<std::size_t>(i)]) / step;  // in steps
    ASSERT_LE(std::abs(e), 0.5 + 1e-5) << i;
    sum += e;
    sum_sq += e * e;
  }
  // U[-1/2, 1/2): mean 0 (sd of the estimate 0.29 / sqrt(n) = 5.6e-4), variance 1/12.
  EXPECT_NEAR(sum / n, 0.0, 3e-3);
  EXPECT_NEAR(sum_sq / n, 1.0 / 12.0, 1e-3);
  std::vector<float> again = x;
  reference::add_weight_rounding_noise(q, again.data(), n, 7);
  EXPECT_EQ(again, y);
  reference::add_weight_rounding_noise(q, again.data() , 32, 8);
  EXPECT_NE(again[3], y[3]);
}

TEST(RoundingNoise, WeightsMoveByUniformErrorsOfTheFormatsStep) {
  expect_rounding_noise(QuantType::Q8_0, 127.0f);
  expect_rounding_noise(QuantType::Q4_0, 8.0f);
}

// Not the quantizer's values: the noise does not land on the q8_0 grid.
TEST(RoundingNoise, IsNotTheQuantizersRounding) {
  const std::vector<float> x = ramp(64);
  std::vector<float> noisy = x, rounded(64);
  reference::add_weight_rounding_noise(QuantType::Q8_0, noisy.data(), 64, 1);
  quantize_round_trip(QuantType::Q8_0, x.data(), rounded.data(), 64);
  int same = 0;
  for (int i = 0; i < 64; ++i) same += noisy[static_cast<std::size_t>(i)] == rounded[static_cast<std::size_t>(i)];
  EXPECT_LE(same, 2);
}

TEST(RoundingNoise, ActivationsMoveByTheQ8Step) {
  const int m = 4, k = 64;
  const std::vector<float> x = ramp(m * k);
  std::vector<float> out(x.size());
  reference::q8_activation_rounding_noise(x.data(), m, k, out.data(), 3);
  for (int i = 0; i < m * k; ++i) {
    const float step = std::abs(x[static_cast<std::size_t>(i / 32 * 32)]) / 127.0f;
    EXPECT_LE(std::abs(out[static_cast<std::size_t>(i)] - x[static_cast<std::size_t>(i)]), 0.5f * step * (1 + 1e-5f));
  }
  EXPECT_NE(out, x);
}

}  // namespace
}  // namespace llmport
