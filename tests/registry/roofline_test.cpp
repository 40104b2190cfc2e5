// The prefill bound uses the best compute peak a kernel path can reach for the weight
// dtype: bf16 weights run with vdpbf16ps or widened to fp32 FMAs ("fma" tile config).
#include <gtest/gtest.h>

#include "llmport/roofline.hpp"

namespace llmport::test {
namespace {

Roofline roof(double bf16, double f32) {
  Roofline r;
  r.bf16_gflops = bf16;
  r.f32_gflops = f32;
  return r;
}

TEST(Roofline, ComputePeakIsTheBestPathForTheDtype) {
  // Intel Xeon VM of issue 6 (vdpbf16ps ~0.5x FMA): bf16 weights are bounded by the FMA peak.
  EXPECT_EQ(compute_peak(roof(169, 343), DType::BF16).gflops, 343);
  EXPECT_EQ(compute_peak(roof(169, 343), DType::BF16).kind, "fp32_fma");
  // Zen 5 figures of issue 6 (2 cores): vdpbf16ps ~2x FMA.
  EXPECT_EQ(compute_peak(roof(820, 436), DType::BF16).gflops, 820);
  EXPECT_EQ(compute_peak(roof(820, 436), DType::BF16).kind, "bf16_dot");
  // No AVX512_BF16: bf16 runs on FMAs.
  EXPECT_EQ(compute_peak(roof(0, 200), DType::BF16).kind, "fp32_fma");
  // fp16 / fp32 weights only ever use FMAs, whatever vdpbf16ps reaches.
  EXPECT_EQ(compute_peak(roof(820, 436), DType::F32).gflops, 436);
  EXPECT_EQ(compute_peak(roof(820, 436), DType::F16).kind, "fp32_fma");
  EXPECT_EQ(compute_peak(Roofline{}, DType::BF16).gflops, 0);
}

TEST(Roofline, PrefillBoundIsPeakOverFlopsPerToken) {
  ModelCost c;
  c.flops_per_token = 1.2e9;
  EXPECT_DOUBLE_EQ(prefill_bound_tps(roof(169, 343), c, DType::BF16), 343e9 / 1.2e9);
  EXPECT_DOUBLE_EQ(prefill_bound_tps(roof(820, 436), c, DType::BF16), 820e9 / 1.2e9);
  EXPECT_DOUBLE_EQ(prefill_bound_tps(roof(820, 436), c, DType::F32), 436e9 / 1.2e9);
  EXPECT_EQ(prefill_bound_tps(roof(169, 343), ModelCost{}, DType::BF16), 0);
}

}  // namespace
}  // namespace llmport::test
