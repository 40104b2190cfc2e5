// The quantized linears through the op harness at every ISA level this host runs: q8_0 and
// q4_0 GEMV (m = 1), GEMM (m > 1) and the q/k/v-style group, with fp32 activations (act 0)
// and q8 activation blocks (act 1), against the reference's exactly dequantized weights
// under tolerance(op, F32, k, act); faults planted in the quantized weights or outputs fail
// the case; every row of a batch equals its solo GEMV bit for bit (batch invariance).
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/quant_linear.hpp"
#include "kernels/cpu_test_util.hpp"
#include "llmport/backend_decorator.hpp"
#include "llmport/op_harness.hpp"

namespace llmport::test {
namespace {

constexpr QuantType kQuants[] = {QuantType::Q8_0, QuantType::Q4_0};

OpCase quant_case(OpKind kind, QuantType q, int act, int m, int n, int k, bool bias) {
  OpCase c{kind, DType::F32};
  c.quant = q;
  c.bias = bias;
  c.tiles = {{kActTileKey, act}};
  if (kind == OpKind::Gemv) c.shape = {{"n", n}, {"k", k}};
  else if (kind == OpKind::Gemm) c.shape = {{"m", m}, {"n", n}, {"k", k}};
  else c.shape = {{"m", m}, {"k", k}, {"n0", n}, {"n1", n / 2 + 1}, {"n2", n / 2 + 1}};
  return c;
}

std::vector<OpCase> cases_of(QuantType q, int act) {
  return {quant_case(OpKind::Gemv, q, act, 1, 37, 96, false),  quant_case(OpKind::Gemv, q, act, 1, 64, 2048, true),
          quant_case(OpKind::Gemm, q, act, 5, 33, 64, true),   quant_case(OpKind::Gemm, q, act, 9, 130, 160, false),
          quant_case(OpKind::LinearGroup, q, act, 3, 40, 96, true), quant_case(OpKind::LinearGroup, q, act, 1, 40, 96, false)};
}

// The tolerance the harness must apply, written out from op.hpp: 2 gamma_{k+1} (+ the
// q8 activation term 1/254 + 4u).
double expected_tolerance(long k, int act) {
  const double u = std::ldexp(1.0, -24), g = (k + 1) * u / (1 - (k + 1) * u);
  return 2 * g + (act == 1 ? 1.0 / 254 + 4 * u : 0.0);
}

TEST(CpuQuantOp, EveryLevelEveryActPassesTheHarnessWithTheDerivedTolerance) {
  OpHarness h;
  int checked = 0;
  for (const std::string& level : backend_levels("cpu")) {
    auto be = make_backend_at("cpu", level, 2);
    for (QuantType q : kQuants)
      for (int act : {0, 1})
        for (const OpCase& c : cases_of(q, act)) {
          ASSERT_TRUE(be->supports(op_desc(c))) << describe(c, {});
          const OpResult r = h.run(*be, c);
          SCOPED_TRACE(level + " " + describe(c, r));
          EXPECT_TRUE(r.pass());
          EXPECT_EQ(r.check.n_checked, static_cast<long>(
              (c.kind == OpKind::Gemv ? 1 : c.shape.at("m")) *
              (c.kind == OpKind::LinearGroup ? c.shape.at("n0") + 2 * c.shape.at("n1") : c.shape.at("n"))));
          EXPECT_DOUBLE_EQ(r.check.tolerance, expected_tolerance(r.k, act));
          EXPECT_EQ(r.config.at(kActTileKey), act);
          // The bound is a worst case: a correct kernel is far inside it.
          EXPECT_LT(r.check.ratio, 0.5);
          ++checked;
        }
  }
  EXPECT_EQ(checked, static_cast<int>(backend_levels("cpu").size()) * 2 * 2 * 6);
}

TEST(CpuQuantOp, TheBackendsClaimQuantizedLinearsOnly) {
  auto cpu = make_backend("cpu", 1);
  auto ref = make_backend("reference");
  for (Backend* be : {cpu.get(), ref.get()}) {
    for (OpKind kind : {OpKind::Gemm, OpKind::Gemv, OpKind::LinearGroup})
      EXPECT_TRUE(be->supports(OpDesc{kind, DType::F32, {}, kQuantBlock, QuantType::Q4_0})) << be->name();
    EXPECT_FALSE(be->supports(OpDesc{OpKind::Rope, DType::F32, {}, kQuantBlock, QuantType::Q4_0}));
    EXPECT_FALSE(be->supports(OpDesc{OpKind::Gemv, DType::F32, {}, 16, QuantType::Q8_0}));
  }
  EXPECT_FALSE(cpu->supports(OpDesc{OpKind::Gemv, DType::BF16, {}, kQuantBlock, QuantType::Q8_0}));
  // The sweepable key: act 0 / 1 on the quantized GEMV, nothing on its GEMM.
  const OpDesc gemv{OpKind::Gemv, DType::F32, {{"n", 64}, {"k", 64}}, kQuantBlock, QuantType::Q8_0};
  EXPECT_EQ(cpu->tile_candidates(gemv), (std::vector<TileConfig>{{{"act", 0}}, {{"act", 1}}}));
  OpDesc gemm = gemv;
  gemm.kind = OpKind::Gemm;
  EXPECT_TRUE(cpu->tile_candidates(gemm).empty());
  EXPECT_EQ(cpu->default_tiles(gemm), cpu->default_tiles(gemv));  // one choice for every m
}

// Faults a quantized kernel could have, planted through the weights it is given (the
// harness's reference keeps the true ones): every block-0 scale doubled (a scale index off
// by one), the q4_0 nibble halves swapped, the last block dropped (a k loop one short).
enum class Fault { ScaleX2, NibbleSwap, LastBlockDropped, OutputBump };

class FaultyQuantBackend final : public ForwardingBackend {
 public:
  FaultyQuantBackend(std::unique_ptr<Backend> inner, Fault f) : ForwardingBackend(std::move(inner)), f_(f) {}
  std::unique_ptr<LinearWeight> make_quantized_linear(const TensorView& w, QuantType q,
                                                      const TileConfig& cfg = {}) override {
    const int n = static_cast<int>(w.shape[0]), k = static_cast<int>(w.shape[1]);
    std::vector<float> bad(static_cast<const float*>(w.data), static_cast<const float*>(w.data) + static_cast<std::size_t>(n) * k);
    for (int j = 0; j < n; ++j) {
      float* row = bad.data() + static_cast<std::size_t>(j) * k;
      if (f_ == Fault::ScaleX2)
        for (int t = 0; t < kQuantBlock; ++t) row[t] *= 2;
      if (f_ == Fault::NibbleSwap)
        for (int b = 0; b < k; b += kQuantBlock)
          for (int t = 0; t < kQuantBlock / 2; ++t) std::swap(row[b + t], row[b + t + kQuantBlock / 2]);
      if (f_ == Fault::LastBlockDropped)
        for (int t = k - kQuantBlock; t < k; ++t) row[t] = 0;
    }
    keep_.push_back(std::move(bad));
    return inner().make_quantized_linear(TensorView::f32(keep_.back().data(), n, k, "w"), q, cfg);
  }
  void linear(const LinearWeight& w, const float* x, int m, float* y, const float* bias = nullptr,
              OpTag tag = {}) override {
    inner().linear(w, x, m, y, bias, tag);
    // 10% of (1 + |y|): the q8 bound allows 1/254 of sum_b amax_b sum |w|, several |y|.
    if (f_ == Fault::OutputBump) {
      float& v = y[static_cast<std::size_t>(m) * w.n_out - 1];
      v += 0.1f * (1.0f + std::abs(v));
    }
  }

 private:
  Fault f_;
  std::vector<std::vector<float>> keep_;
};

TEST(CpuQuantOp, PlantedFaultsAreCaughtAtEveryLevelAndAct) {
  for (const std::string& level : backend_levels("cpu"))
    for (QuantType q : kQuants)
      for (int act : {0, 1})
        for (Fault f : {Fault::ScaleX2, Fault::NibbleSwap, Fault::LastBlockDropped, Fault::OutputBump}) {
          OpHarness h;
          FaultyQuantBackend be(make_backend_at("cpu", level, 1), f);
          for (OpKind kind : {OpKind::Gemv, OpKind::Gemm}) {
            const OpCase c = quant_case(kind, q, act, 4, 48, 128, false);
            const OpResult r = h.run(be, c);
            SCOPED_TRACE(level + " fault " + std::to_string(static_cast<int>(f)) + " " + describe(c, r));
            EXPECT_FALSE(r.pass());
            EXPECT_GT(r.check.ratio, 1.0);
          }
        }
}


// Shapes with every tail of the panel tile loops: m = 67 crosses the 64-row block and ends in
// 3 single rows; n = 37 (2 panels and 5 columns) and 72 (4 and a half) end the 2- and 4-panel
// tiles, in a partial panel (and, at AVX2, a half panel).
struct BatchShape {
  int n, k, m;
};
constexpr BatchShape kBatchShapes[] = {{72, 160, 8}, {37, 96, 67}};

TEST(CpuQuantOp, EveryRowOfABatchEqualsItsSoloGemvBitForBit) {
  int checked = 0;
  for (const BatchShape& s : kBatchShapes) {
    const int n = s.n, k = s.k, m = s.m;
    const auto wf = random_vec(static_cast<std::size_t>(n) * k, 0.3f, 7);
    const auto x = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 8);
    const auto bias = random_vec(static_cast<std::size_t>(n), 0.1f, 9);
    for (const auto isa : cpu::supported_isas())
      for (QuantType q : kQuants)
        for (int act : {0, 1}) {
          SCOPED_TRACE(std::string(cpu::isa_name(isa)) + " " + std::string(quant_name(q)) + " act " +
                       std::to_string(act) + " m=" + std::to_string(m));
          auto be = cpu::make_cpu_backend_isa(2, isa);  // batch-invariant mode not needed: act is per weight
          const auto w = be->make_quantized_linear(TensorView::f32(wf.data(), n, k, "w"), q, {{"act", act}});
          std::vector<float> batched(static_cast<std::size_t>(m) * n);
          be->linear(*w, x.data(), m, batched.data(), bias.data());
          for (int i = 0; i < m; ++i) {
            std::vector<float> solo(static_cast<std::size_t>(n));
            be->linear(*w, x.data() + static_cast<std::size_t>(i) * k, 1, solo.data(), bias.data());
            EXPECT_TRUE(same_bits(solo.data(), batched.data() + static_cast<std::size_t>(i) * n, n)) << "row " << i;
          }
          ++checked;
        }
  }
  EXPECT_EQ(checked, static_cast<int>(cpu::supported_isas().size()) * 4 * 2);
}

// A column is one vector lane at every level and each level performs the same fp32
// operations in the same order (quant_linear.hpp, "Numerics"; the scalar level with
// std::fma), so every level, scalar included, gives the same bits for either act.
TEST(CpuQuantOp, EveryLevelGivesTheSameBits) {
  const auto isas = cpu::supported_isas();
  if (isas.size() < 2) GTEST_SKIP() << "one level on this host: nothing to compare";
  int checked = 0;
  for (const BatchShape& s : kBatchShapes) {
    const auto wf = random_vec(static_cast<std::size_t>(s.n) * s.k, 0.3f, 17);
    const auto x = random_vec(static_cast<std::size_t>(s.m) * s.k, 1.0f, 18);
    const auto bias = random_vec(static_cast<std::size_t>(s.n), 0.1f, 19);
    for (QuantType q : kQuants)
      for (int act : {0, 1}) {
        std::vector<float> first;
        for (const auto isa : isas) {
          SCOPED_TRACE(std::string(cpu::isa_name(isa)) + " " + std::string(quant_name(q)) + " act " +
                       std::to_string(act) + " m=" + std::to_string(s.m));
          auto be = cpu::make_cpu_backend_isa(2, isa);
          const auto w = be->make_quantized_linear(TensorView::f32(wf.data(), s.n, s.k, "w"), q, {{"act", act}});
          std::vector<float> y(static_cast<std::size_t>(s.m) * s.n);
          be->linear(*w, x.data(), s.m, y.data(), bias.data());
          if (first.empty()) first = y;
          else EXPECT_TRUE(same_bits(first.data(), y.data(), y.size())) << "differs from " << cpu::isa_name(isas[0]);
          ++checked;
        }
      }
  }
  EXPECT_EQ(checked, static_cast<int>(isas.size()) * 2 * 2 * 2);
}

// The panel layout of quant_linear.hpp, byte for byte, for both formats: 17 columns (a full
// panel and one column of a second, whose other 15 are zero).
TEST(CpuQuantOp, PanelsHoldTheDocumentedLayout) {
  constexpr int n = 17, k = 64;
  const auto wf = random_vec(static_cast<std::size_t>(n) * k, 1.0f, 23);
  for (QuantType q : kQuants) {
    SCOPED_TRACE(std::string(quant_name(q)));
    const auto w = cpu::quantize_linear(TensorView::f32(wf.data(), n, k, "w"), q);
    ASSERT_EQ(w->n_panels(), 2);
    EXPECT_EQ(w->bytes(), 2u * 2u * (q == QuantType::Q8_0 ? 544u : 288u));
    std::vector<std::byte> ggml(quant_row_bytes(q, k)), back(ggml.size());
    for (int j = 0; j < n; ++j) {
      if (q == QuantType::Q8_0) quantize_row_q8_0(wf.data() + j * k, reinterpret_cast<BlockQ8_0*>(ggml.data()), k);
      else quantize_row_q4_0(wf.data() + j * k, reinterpret_cast<BlockQ4_0*>(ggml.data()), k);
      w->get_row(j, back.data());
      EXPECT_EQ(std::memcmp(ggml.data(), back.data(), ggml.size()), 0) << "row " << j;
      const int p = j / 16, c = j % 16;
      for (int b = 0; b < k / 32; ++b) {
        const auto* pb = reinterpret_cast<const uint8_t*>(w->panel_block(p, b));
        uint16_t d;
        std::memcpy(&d, pb + 2 * c, 2);
        if (q == QuantType::Q8_0) {
          const auto& blk = reinterpret_cast<const BlockQ8_0*>(ggml.data())[b];
          EXPECT_EQ(d, blk.d);
          for (int e = 0; e < 32; ++e)  // group e / 4, column c, byte e % 4: q + 128
            ASSERT_EQ(pb[32 + ((e / 4) * 16 + c) * 4 + e % 4], static_cast<uint8_t>(blk.qs[e] + 128)) << e;
        } else {
          const auto& blk = reinterpret_cast<const BlockQ4_0*>(ggml.data())[b];
          EXPECT_EQ(d, blk.d);
          for (int e = 0; e < 16; ++e)  // ggml byte e (elements e and e + 16)
            ASSERT_EQ(pb[32 + ((e / 4) * 16 + c) * 4 + e % 4], blk.qs[e]) << e;
        }
      }
    }
    for (int b = 0; b < k / 32; ++b) {  // the second panel's 15 padding columns are zero
      const auto* pb = reinterpret_cast<const uint8_t*>(w->panel_block(1, b));
      for (std::size_t off = 0; off < w->panel_block_bytes(); ++off) {
        const bool scale_of_col0 = off < 2;
        const bool quant_of_col0 = off >= 32 && ((off - 32) / 4) % 16 == 0;
        if (!scale_of_col0 && !quant_of_col0) {
          ASSERT_EQ(pb[off], 0) << "offset " << off;
        }
      }
    }
  }
}

TEST(CpuQuantOp, ActivationBlocksAreTheFormulas) {
  // d = max|x| / 127 in fp32; q = round-half-even(x / d). Block 0 has max|x| = 127, so
  // d = 1 exactly and the ties are exact; block 1 is all zero (d 0, q 0); block 2 scales.
  std::vector<float> x(96, 0.0f);
  x[0] = -127.0f;
  x[1] = 63.5f;   // -> 64
  x[2] = 0.5f;    // -> 0
  x[3] = 1.5f;    // -> 2
  x[4] = -2.5f;   // -> -2
  x[5] = 126.6f;  // -> 127
  x[64] = 0.254f;  // d = 0.002, q = 127
  x[65] = -0.127f; // q = -63.5 -> -64 (or -63 by one ulp of x / d); |x_q d - x| <= d / 2 + 3u
  std::vector<int8_t> q(96);
  std::vector<float> d(3);
  std::vector<int32_t> sum(3);
  cpu::quantize_act_rows(x.data(), 0, 1, 96, q.data(), d.data(), sum.data());
  EXPECT_EQ(d[0], 1.0f);
  EXPECT_EQ(d[1], 0.0f);
  EXPECT_EQ(d[2], 0.254f / 127.0f);
  EXPECT_EQ((std::vector<int>{q[0], q[1], q[2], q[3], q[4], q[5]}), (std::vector<int>{-127, 64, 0, 2, -2, 127}));
  for (int t = 32; t < 64; ++t) EXPECT_EQ(q[t], 0);
  EXPECT_EQ(q[64], 127);
  EXPECT_LE(std::abs(q[65] * d[2] - x[65]), d[2] * (0.5 + 1e-5));
  // s: each block's sum of quants (-127 + 64 + 0 + 2 - 2 + 127 = 64; 0; 127 + q[65]).
  EXPECT_EQ(sum[0], 64);
  EXPECT_EQ(sum[1], 0);
  EXPECT_EQ(sum[2], 127 + q[65]);
}

// Blocks no plain x * id quantizes: a NaN or an Inf (the float-to-int conversion of NaN/Inf is
// undefined; x86 gives 0, so the block silently became zeros) gets d = NaN and zero quants;
// a block whose max|x| is so small that 1/d overflows (d below 2.9e-39) is quantized by
// x / d, the same quotient.
TEST(CpuQuantOp, ActivationBlocksWithNanInfOrTinyValues) {
  std::vector<float> x(96, 0.5f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[40] = -std::numeric_limits<float>::infinity();
  for (int t = 64; t < 96; ++t) x[t] = 1e-38f;
  x[64] = 2e-37f;
  x[65] = -1.1e-37f;
  std::vector<int8_t> q(96, 99);
  std::vector<float> d(3);
  std::vector<int32_t> sum(3, 99);
  cpu::quantize_act_rows(x.data(), 0, 1, 96, q.data(), d.data(), sum.data());
  EXPECT_TRUE(std::isnan(d[0]));
  EXPECT_TRUE(std::isnan(d[1]));
  for (int t = 0; t < 64; ++t) EXPECT_EQ(q[t], 0) << t;
  EXPECT_EQ(sum[0], 0);
  EXPECT_EQ(sum[1], 0);
  EXPECT_EQ(d[2], 2e-37f / 127.0f);
  EXPECT_TRUE(std::isinf(1.0f / d[2]));  // the case: 1/d overflows
  EXPECT_EQ(q[64], 127);
  EXPECT_EQ(q[65], -70);  // -1.1e-37 / (2e-37 / 127) = -69.85
  EXPECT_EQ(q[66], 6);    // 1e-38 / d = 6.35
  EXPECT_EQ(sum[2], 127 - 70 + 30 * 6);
}

// A NaN in one input element of a quantized linear makes every output NaN at every level and
// act, as in fp32: with q8 activation blocks (act 1) it used to vanish (its block became zero
// quants), so a NaN weight in an RMSNorm gave finite logits and a plausible perplexity.
TEST(CpuQuantOp, ANanActivationMakesEveryOutputNanAtEveryLevelAndAct) {
  constexpr int n = 37, k = 96, m = 3;
  const auto wf = random_vec(static_cast<std::size_t>(n) * k, 0.3f, 31);
  auto x = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 32);
  x[static_cast<std::size_t>(k) + 5] = std::numeric_limits<float>::quiet_NaN();  // row 1 only
  for (const auto isa : cpu::supported_isas())
    for (QuantType q : kQuants)
      for (int act : {0, 1}) {
        SCOPED_TRACE(std::string(cpu::isa_name(isa)) + " " + std::string(quant_name(q)) + " act " + std::to_string(act));
        auto be = cpu::make_cpu_backend_isa(1, isa);
        const auto w = be->make_quantized_linear(TensorView::f32(wf.data(), n, k, "w"), q, {{"act", act}});
        std::vector<float> y(static_cast<std::size_t>(m) * n);
        be->linear(*w, x.data(), m, y.data(), nullptr);
        for (int j = 0; j < n; ++j) {
          EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(n) + j])) << "row 1 col " << j;
          EXPECT_TRUE(std::isfinite(y[static_cast<std::size_t>(j)])) << "row 0 col " << j;
          EXPECT_TRUE(std::isfinite(y[static_cast<std::size_t>(2 * n) + j])) << "row 2 col " << j;
        }
      }
}

TEST(CpuQuantOp, TheQ8DotOfEachLevelIsNamed) {
  // On this host (AVX512_BF16 CPUs all have AVX512_VNNI) the top level uses vpdpbusd.
  for (const auto isa : cpu::supported_isas()) {
    const std::string dot = cpu::quant_q8_dot_name(isa);
    if (isa == cpu::Isa::Scalar) EXPECT_EQ(dot, "scalar");
    else if (isa == cpu::Isa::Avx512Bf16) EXPECT_EQ(dot, __builtin_cpu_supports("avx512vnni") ? "vnni" : "maddubs");
    else EXPECT_EQ(dot, "maddubs");
  }
}

}  // namespace
}  // namespace llmport::test
