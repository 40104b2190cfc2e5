// The rounding-noise backend (rounding_noise.hpp): each value moves by at most half its
// block's step, the errors are uniform (mean 0, variance step^2 / 12, the quantization-noise
// model) and independent of the quantizer, the draws are the same for the same seed, and
// the backend applies them to exactly the quantized linears (and q8 activations) it is
// asked for.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/backend_impls.hpp"
#include "kernels/rounding_noise.hpp"
#include "llmport/error.hpp"
#include "llmport/op.hpp"
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
  add_weight_rounding_noise(q, y.data(), n, 7);
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
  add_weight_rounding_noise(q, again.data(), n, 7);
  EXPECT_EQ(again, y);
  add_weight_rounding_noise(q, again.data() , 32, 8);
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
  add_weight_rounding_noise(QuantType::Q8_0, noisy.data(), 64, 1);
  quantize_round_trip(QuantType::Q8_0, x.data(), rounded.data(), 64);
  int same = 0;
  for (int i = 0; i < 64; ++i) same += noisy[static_cast<std::size_t>(i)] == rounded[static_cast<std::size_t>(i)];
  EXPECT_LE(same, 2);
}

TEST(RoundingNoise, ActivationsMoveByTheQ8Step) {
  const int m = 4, k = 64;
  const std::vector<float> x = ramp(m * k);
  std::vector<float> out(x.size());
  q8_activation_rounding_noise(x.data(), m, k, out.data(), 3);
  for (int i = 0; i < m * k; ++i) {
    const float step = std::abs(x[static_cast<std::size_t>(i / 32 * 32)]) / 127.0f;
    EXPECT_LE(std::abs(out[static_cast<std::size_t>(i)] - x[static_cast<std::size_t>(i)]), 0.5f * step * (1 + 1e-5f));
  }
  EXPECT_NE(out, x);
}

// A quantized linear of the backend multiplies the noisy fp32 weights: its output is the
// plain product of add_weight_rounding_noise's rows (the same draw), within fp32 summation
// order; with act Q8 the input moves too (the output differs again); another draw differs.
TEST(RoundingNoise, BackendMultipliesNoisyWeightsAndActivations) {
  const int n = 8, k = 64;
  std::vector<float> w = ramp(n * k), x = ramp(k);
  for (float& v : x) v *= 0.5f;
  TensorView t;
  t.name = "model.layers.0.self_attn.o_proj.weight";
  t.dtype = DType::F32;
  t.shape = {n, k};
  t.data = w.data();
  t.nbytes = w.size() * sizeof(float);
  auto out = [&](uint64_t draw, ActQuant act) {
    auto be = make_backend_at("cpu", "rounding-noise/" + std::to_string(draw), 1);
    auto lw = be->make_quantized_linear(t, QuantType::Q8_0, {{kActTileKey, static_cast<int>(act)}});
    std::vector<float> y(n);
    be->linear(*lw, x.data(), 1, y.data());
    return y;
  };
  std::vector<float> noisy = w;
  for (int r = 0; r < n; ++r)
    add_weight_rounding_noise(QuantType::Q8_0, noisy.data() + r * k, k, noise_seed(t.name.c_str(), r, 0));
  const std::vector<float> y = out(0, ActQuant::F32);
  for (int r = 0; r < n; ++r) {
    double want = 0, plain = 0, scale = 0;
    for (int i = 0; i < k; ++i) {
      want += double(noisy[r * k + i]) * x[i];
      plain += double(w[r * k + i]) * x[i];
      scale += std::abs(double(noisy[r * k + i]) * x[i]);
    }
    EXPECT_NEAR(y[r], want, 1e-6 * scale) << r;
    EXPECT_GT(std::abs(y[r] - plain), 1e-6 * scale) << r;  // the noise is there
  }
  // "quantizer": the quantizer's values, exactly what quantize_round_trip gives.
  {
    auto be = make_backend_at("cpu", "rounding-noise/quantizer", 1);
    auto lw = be->make_quantized_linear(t, QuantType::Q8_0, {{kActTileKey, static_cast<int>(ActQuant::F32)}});
    std::vector<float> yq(n), rt(w.size());
    be->linear(*lw, x.data(), 1, yq.data());
    quantize_round_trip(QuantType::Q8_0, w.data(), rt.data(), n * k);
    for (int r = 0; r < n; ++r) {
      double want = 0, scale = 0;
      for (int i = 0; i < k; ++i) {
        want += double(rt[r * k + i]) * x[i];
        scale += std::abs(double(rt[r * k + i]) * x[i]);
      }
      EXPECT_NEAR(yq[r], want, 1e-6 * scale) << r;
    }
  }
  EXPECT_EQ(out(0, ActQuant::F32), y);  // deterministic
  EXPECT_NE(out(0, ActQuant::Q8), y);
  EXPECT_NE(out(1, ActQuant::F32), y);
  EXPECT_THROW(make_backend_at("cpu", "rounding-noise/x", 1), UsageError);
  EXPECT_THROW(make_backend_at("cpu", "rounding-noise", 1), UsageError);
  EXPECT_NO_THROW(make_backend_at("cpu", "rounding-noise/off", 1));
}

}  // namespace
}  // namespace llmport
