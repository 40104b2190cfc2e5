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

// Block-quantized weights run with int8 activation blocks or widened to fp32 ("act"): their
// peak is the better of the int8 dot and the FMA, never the bf16 one.
TEST(Roofline, QuantizedWeightsAreBoundedByTheBetterOfInt8DotAndFma) {
  Roofline r = roof(820, 436);
  r.int8_gops = 1640;
  for (QuantType q : {QuantType::Q8_0, QuantType::Q4_0}) {
    EXPECT_EQ(compute_peak(r, DType::BF16, q).gflops, 1640);
    EXPECT_EQ(compute_peak(r, DType::BF16, q).kind, "int8_dot");
    EXPECT_EQ(compute_peak(r, DType::F32, q).kind, "int8_dot");
  }
  // Without an int8 figure, or with a slower one: the FMA peak.
  EXPECT_EQ(compute_peak(roof(820, 436), DType::BF16, QuantType::Q8_0).gflops, 436);
  EXPECT_EQ(compute_peak(roof(820, 436), DType::BF16, QuantType::Q8_0).kind, "fp32_fma");
  r.int8_gops = 300;
  EXPECT_EQ(compute_peak(r, DType::BF16, QuantType::Q4_0).gflops, 436);
  // Unquantized weights ignore the int8 peak.
  r.int8_gops = 1640;
  EXPECT_EQ(compute_peak(r, DType::BF16).gflops, 820);
  ModelCost c;
  c.layer_flops_per_token = 1.0e9;
  EXPECT_DOUBLE_EQ(prefill_bound_tps(r, c, DType::BF16, 4, QuantType::Q8_0), 1640e9 * 4 / (4 * 1.0e9));
}

// The measured int8 peak: positive on any AVX2 machine, and measured only when asked for.
TEST(Roofline, TheInt8PeakIsMeasuredWhenAskedFor) {
  const Roofline with = measure_compute_peaks(1, false, true);
  const Roofline without = measure_compute_peaks(1, false, false);
  EXPECT_EQ(without.int8_gops, 0);
  if (with.f32_gflops == 0) GTEST_SKIP() << "no AVX2: no peaks measured";
  EXPECT_GT(with.int8_gops, 0);
}

TEST(Roofline, PrefillBoundIsPeakOverFlopsPerToken) {
  ModelCost c;
  c.layer_flops_per_token = 1.0e9;
  c.lm_head_flops = 0.2e9;
  c.attn_flops_per_pair = 1e5;
  // n = 4: 4 tokens through the layers, 10 causal (query, key) pairs, one lm_head row.
  const double flops4 = 4 * 1.0e9 + 10 * 1e5 + 0.2e9;
  EXPECT_DOUBLE_EQ(prefill_flops(c, 4), flops4);
  EXPECT_DOUBLE_EQ(prefill_bound_tps(roof(169, 343), c, DType::BF16, 4), 343e9 * 4 / flops4);
  EXPECT_DOUBLE_EQ(prefill_bound_tps(roof(820, 436), c, DType::BF16, 4), 820e9 * 4 / flops4);
  EXPECT_DOUBLE_EQ(prefill_bound_tps(roof(820, 436), c, DType::F32, 4), 436e9 * 4 / flops4);
  EXPECT_EQ(prefill_bound_tps(roof(169, 343), ModelCost{}, DType::BF16, 4), 0);
  EXPECT_EQ(prefill_bound_tps(roof(169, 343), c, DType::BF16, 0), 0);
}

// The per-token costs from a config, by hand for a small GQA model with untied embeddings.
TEST(Roofline, ModelCostFromConfig) {
  ModelConfig cfg;
  cfg.emb_dim = 64;
  cfg.n_heads = 4;
  cfg.n_kv_heads = 2;
  cfg.head_dim = 16;
  cfg.hidden_dim = 96;
  cfg.n_layers = 3;
  cfg.vocab_size = 100;
  const ModelCost c = model_cost(cfg, DType::BF16);
  // q, o: 64 x 64 each; k, v: 64 x 32 each; gate, up, down: 64 x 96 each.
  const double per_layer = 2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 96;
  EXPECT_DOUBLE_EQ(c.layer_flops_per_token, 2 * 3 * per_layer);
  EXPECT_DOUBLE_EQ(c.lm_head_flops, 2 * 100 * 64);
  EXPECT_DOUBLE_EQ(c.flops_per_token, 2 * (3 * per_layer + 100 * 64));
  EXPECT_DOUBLE_EQ(c.weight_bytes, 2 * (3 * per_layer + 100 * 64));
  EXPECT_DOUBLE_EQ(c.attn_flops_per_pair, 4.0 * 4 * 16 * 3);
  EXPECT_DOUBLE_EQ(c.kv_bytes_per_pos, 2.0 * 3 * 2 * 16 * 4);
}

}  // namespace
}  // namespace llmport::test
