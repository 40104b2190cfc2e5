// The cpu backend's q8_0 / q4_0 linears at every ISA level this host runs, against the
// reference backend (which multiplies the dequantized weights in fp32) with the fp32
// linear's tolerance: w = q * d is exact in fp32, so a kernel's only error is its summation
// order (tolerance(op, fp32, k) * sum_j |w_ij x_j|, op.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "llmport/error.hpp"
#include "llmport/kernels.hpp"
#include "llmport/quant.hpp"
#include "llmport/tolerance.hpp"

namespace llmport {
namespace {

std::vector<float> random_vec(std::size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(CpuQuantLinear, EveryLevelMatchesTheReferenceWithinTheFp32Tolerance) {
  auto ref = make_backend("reference");
  const auto levels = backend_levels("cpu");
  ASSERT_FALSE(levels.empty());
  int cases = 0;
  for (const std::string& level : levels) {
    auto be = make_backend_at("cpu", level, 2);
    for (QuantType q : {QuantType::Q8_0, QuantType::Q4_0})
      for (const auto& [n, k] : std::vector<std::pair<int, int>>{{37, 64}, {16, 2048}, {5, 32}, {130, 96}}) {
        const auto w = random_vec(static_cast<std::size_t>(n) * k, 1.0f / std::sqrt(static_cast<float>(k)), 7);
        const TensorView tv = TensorView::f32(w.data(), n, k, "w");
        // act 0: fp32 x times the widened weights (act 1, q8 x blocks: cpu_quant_op_test.cpp).
        auto got_w = be->make_quantized_linear(tv, q, {{"act", 0}});
        auto ref_w = ref->make_quantized_linear(tv, q);
        ASSERT_EQ(got_w->quant, q);
        // |W_dequantized| for the per-element scale.
        std::vector<float> wd(w.size());
        for (int r = 0; r < n; ++r)
          quantize_round_trip(q, w.data() + static_cast<std::size_t>(r) * k, wd.data() + static_cast<std::size_t>(r) * k, k);
        const auto bias = random_vec(static_cast<std::size_t>(n), 0.5f, 9);
        for (int m : {1, 3, 4, 9})
          for (bool with_bias : {false, true}) {
            SCOPED_TRACE(level + " " + std::string(quant_name(q)) + " n=" + std::to_string(n) +
                         " k=" + std::to_string(k) + " m=" + std::to_string(m) + (with_bias ? " bias" : ""));
            const auto x = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 11 + static_cast<uint32_t>(m));
            const float* b = with_bias ? bias.data() : nullptr;
            std::vector<float> got(static_cast<std::size_t>(m) * n, NAN), want(got.size()), scale(got.size());
            be->linear(*got_w, x.data(), m, got.data(), b);
            ref->linear(*ref_w, x.data(), m, want.data(), b);
            for (int i = 0; i < m; ++i)
              for (int j = 0; j < n; ++j) {
                double s = with_bias ? std::abs(bias[static_cast<std::size_t>(j)]) : 0.0;
                for (int t = 0; t < k; ++t)
                  s += std::abs(static_cast<double>(wd[static_cast<std::size_t>(j) * k + t]) * x[static_cast<std::size_t>(i) * k + t]);
                scale[static_cast<std::size_t>(i) * n + j] = static_cast<float>(s);
              }
            ToleranceCheck c;
            c.tolerance = tolerance(m == 1 ? OpKind::Gemv : OpKind::Gemm, DType::F32, k + (with_bias ? 1 : 0));
            check_tolerance(c, got.data(), want.data(), scale.data(), got.size());
            EXPECT_TRUE(c.pass) << "max rel err " << c.max_rel_err << " vs tolerance " << c.tolerance;
            EXPECT_EQ(c.n_checked, static_cast<long>(got.size()));
            ++cases;
          }
      }
  }
  EXPECT_EQ(cases, static_cast<int>(levels.size()) * 2 * 4 * 4 * 2);
}

// act 1: the reference given the same config rounds x through the q8 activation blocks
// (reference::q8_activation_round_trip), so the int8 dot products must equal it within the
// fp32 tolerance too: the kernel check of a quantized verify (VerifyResult::kernel_mean_kl)
// mirrors the engine's activations this way. Before, the reference multiplied fp32 x and
// only the looser q8 term (1/254 of the block max, cpu_quant_op_test.cpp) bounded the two.
TEST(CpuQuantLinear, Q8ActivationsMatchTheReferenceRoundingTheSameBlocks) {
  auto ref = make_backend("reference");
  int cases = 0;
  for (const std::string& level : backend_levels("cpu")) {
    auto be = make_backend_at("cpu", level, 2);
    for (QuantType q : {QuantType::Q8_0, QuantType::Q4_0})
      for (const auto& [n, k] : std::vector<std::pair<int, int>>{{37, 64}, {16, 2048}, {130, 96}}) {
        const auto w = random_vec(static_cast<std::size_t>(n) * k, 1.0f / std::sqrt(static_cast<float>(k)), 7);
        const TensorView tv = TensorView::f32(w.data(), n, k, "w");
        auto got_w = be->make_quantized_linear(tv, q, {{"act", 1}});
        auto ref_w = ref->make_quantized_linear(tv, q, {{"act", 1}});
        std::vector<float> wd(w.size());
        for (int r = 0; r < n; ++r)
          quantize_round_trip(q, w.data() + static_cast<std::size_t>(r) * k, wd.data() + static_cast<std::size_t>(r) * k, k);
        for (int m : {1, 4, 9}) {
          SCOPED_TRACE(level + " " + std::string(quant_name(q)) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                       " m=" + std::to_string(m));
          const auto x = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 11 + static_cast<uint32_t>(m));
          std::vector<float> got(static_cast<std::size_t>(m) * n, NAN), want(got.size()), scale(got.size());
          be->linear(*got_w, x.data(), m, got.data(), nullptr);
          ref->linear(*ref_w, x.data(), m, want.data(), nullptr);
          for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) {
              double sum = 0;
              for (int t = 0; t < k; ++t)
                sum += std::abs(static_cast<double>(wd[static_cast<std::size_t>(j) * k + t]) * x[static_cast<std::size_t>(i) * k + t]);
              scale[static_cast<std::size_t>(i) * n + j] = static_cast<float>(sum);
            }
          ToleranceCheck c;
          c.tolerance = tolerance(m == 1 ? OpKind::Gemv : OpKind::Gemm, DType::F32, k);
          check_tolerance(c, got.data(), want.data(), scale.data(), got.size());
          EXPECT_TRUE(c.pass) << "max rel err " << c.max_rel_err << " vs tolerance " << c.tolerance;
          ++cases;
        }
      }
  }
  EXPECT_GT(cases, 0);
}

TEST(CpuQuantLinear, APlantedScaleFaultIsCaught) {
  // The check above must be able to fail: one block's scale doubled is far outside it.
  auto ref = make_backend("reference");
  auto be = make_backend("cpu", 1);
  const int n = 8, k = 64;
  const auto w = random_vec(static_cast<std::size_t>(n) * k, 0.125f, 3);
  auto bad = w;
  for (int t = 0; t < 32; ++t) bad[static_cast<std::size_t>(t)] *= 2;  // block 0 of row 0: 2x d
  auto got_w = be->make_quantized_linear(TensorView::f32(bad.data(), n, k), QuantType::Q8_0, {{"act", 0}});
  auto ref_w = ref->make_quantized_linear(TensorView::f32(w.data(), n, k), QuantType::Q8_0);
  const auto x = random_vec(static_cast<std::size_t>(k), 1.0f, 4);
  std::vector<float> got(n), want(n);
  be->linear(*got_w, x.data(), 1, got.data());
  ref->linear(*ref_w, x.data(), 1, want.data());
  EXPECT_GT(std::abs(got[0] - want[0]), 1e-3);
  for (int j = 1; j < n; ++j) EXPECT_NEAR(got[static_cast<std::size_t>(j)], want[static_cast<std::size_t>(j)], 1e-4);
}

TEST(CpuQuantLinear, AnInputDimensionNotInWholeBlocksIsRefused) {
  auto be = make_backend("cpu", 1);
  const std::vector<float> w(3 * 40, 1.0f);
  EXPECT_THROW(be->make_quantized_linear(TensorView::f32(w.data(), 3, 40), QuantType::Q4_0), UsageError);
}

// A weight no fp16 scale can represent (|w| beyond 65504 * 8 for q4_0, 65504 * 127 for
// q8_0, or not finite) is refused at quantization, naming tensor, row and block, on the cpu
// backend (any thread count) and the reference alike: its outputs would all be NaN.
TEST(CpuQuantLinear, AWeightBeyondTheFp16ScaleRangeIsRefusedNamingRowAndBlock) {
  constexpr int n = 40, k = 96;
  struct Case {
    QuantType q;
    float value;
    bool refused;
  };
  const Case cases[] = {{QuantType::Q4_0, 6.0e5f, true},  {QuantType::Q4_0, 5.0e5f, false},
                        {QuantType::Q8_0, 6.0e5f, false}, {QuantType::Q8_0, 9.0e6f, true},
                        {QuantType::Q8_0, std::nanf(""), true}, {QuantType::Q4_0, INFINITY, true}};
  for (const Case& c : cases)
    for (const char* backend : {"cpu", "reference"})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::string(backend) + " " + std::string(quant_name(c.q)) + " " + std::to_string(c.value));
        std::vector<float> w(static_cast<std::size_t>(n) * k, 0.01f);
        w[33 * k + 40] = c.value;   // row 33, block 1
        w[37 * k + 90] = c.value;   // a later row: the message names the first
        auto be = make_backend(backend, threads);
        const auto view = TensorView::f32(w.data(), n, k, "model.layers.0.mlp.up_proj.weight");
        if (!c.refused) {
          EXPECT_NO_THROW(be->make_quantized_linear(view, c.q));
          continue;
        }
        try {
          be->make_quantized_linear(view, c.q);
          ADD_FAILURE() << "not refused";
        } catch (const WeightsError& e) {
          const std::string msg = e.what();
          EXPECT_NE(msg.find("model.layers.0.mlp.up_proj.weight: row 33: block 1 (elements 32..63)"), std::string::npos)
              << msg;
          if (std::isfinite(c.value))
            EXPECT_NE(msg.find(std::string("has a value beyond |w| = ") + (c.q == QuantType::Q8_0 ? "8319008" : "524032")),
                      std::string::npos) << msg;
          else
            EXPECT_NE(msg.find("has a value that is not finite"), std::string::npos) << msg;
        }
      }
}

}  // namespace
}  // namespace llmport
