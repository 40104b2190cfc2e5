// Batch invariance of the cpu linears (`llmport serve`'s continuous batching): in
// batch-invariant mode every row of an m-row linear equals, bit for bit, the same row run
// alone (m = 1), for every weight dtype and tile config, including the bf16 tile config
// whose prefill GEMM otherwise takes the fp32-FMA path ("fma": 1).
#include <cstring>

#include "kernels/cpu_test_util.hpp"

namespace llmport::test {
namespace {


struct Case {
  DType dtype;
  TileConfig cfg;
};

TEST(CpuBatchInvariant, EveryRowOfABatchEqualsItsSoloGemv) {
  const int n = 72, k = 150, m = 8;  // n not a multiple of 16, k odd pairs
  const auto wf = random_vec(static_cast<std::size_t>(n) * k, 0.5f, 7);
  const auto x = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 8);
  const auto bias = random_vec(static_cast<std::size_t>(n), 0.1f, 9);
  const TensorView tv = TensorView::f32(wf.data(), n, k, "w");
  const std::vector<Case> cases = {
      {DType::F32, {}},
      {DType::BF16, {}},
      {DType::BF16, {{"mr", 13}, {"np", 2}, {"kc", 64}, {"mc", 91}, {"nc", 512}, {"gnp", 4}, {"fma", 1}}},
      {DType::F16, {}},
  };
  int checked = 0;
  for (const auto isa : cpu::supported_isas()) {
    for (const Case& c : cases) {
      if (c.cfg.count("fma") && isa < cpu::Isa::Avx512) continue;  // fma needs AVX-512
      SCOPED_TRACE(std::string(cpu::isa_name(isa)) + " " + std::string(dtype_name(c.dtype)) +
                   (c.cfg.count("fma") ? " fma" : ""));
      auto be = cpu::make_cpu_backend_isa(2, isa);
      be->set_batch_invariant(true);
      const auto w = be->make_linear(tv, c.dtype, c.cfg);
      std::vector<float> batched(static_cast<std::size_t>(m) * n);
      be->linear(*w, x.data(), m, batched.data(), bias.data());
      for (int i = 0; i < m; ++i) {
        std::vector<float> solo(static_cast<std::size_t>(n));
        be->linear(*w, x.data() + static_cast<std::size_t>(i) * k, 1, solo.data(), bias.data());
        EXPECT_TRUE(same_bits(solo.data(), batched.data() + static_cast<std::size_t>(i) * n, n))
            << "row " << i;
      }
      // linear_group (the q/k/v and gate/up groups) as well.
      std::vector<float> g0(static_cast<std::size_t>(m) * n), g1(g0.size());
      const LinearCall calls[2] = {{w.get(), g0.data(), bias.data()}, {w.get(), g1.data(), nullptr}};
      be->linear_group(calls, x.data(), m);
      EXPECT_TRUE(same_bits(g0.data(), batched.data(), batched.size()));
      for (int i = 0; i < m; ++i) {
        std::vector<float> s0(static_cast<std::size_t>(n)), s1(s0.size());
        const LinearCall one[2] = {{w.get(), s0.data(), bias.data()}, {w.get(), s1.data(), nullptr}};
        be->linear_group(one, x.data() + static_cast<std::size_t>(i) * k, 1);
        EXPECT_TRUE(same_bits(s1.data(), g1.data() + static_cast<std::size_t>(i) * n, n)) << "row " << i;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);
}

TEST(CpuBatchInvariant, TheFmaPrefillPathDiffersWithoutTheMode) {
  // What the mode is for: a bf16 "fma": 1 GEMM sums in another order than the GEMV.
  if (!cpu::isa_supported(cpu::Isa::Avx512)) GTEST_SKIP() << "the fp32-FMA bf16 GEMM needs AVX-512";
  const int n = 64, k = 512, m = 4;
  const auto wf = random_vec(static_cast<std::size_t>(n) * k, 0.5f, 17);
  const auto x = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 18);
  const TensorView tv = TensorView::f32(wf.data(), n, k, "w");
  auto be = cpu::make_cpu_backend_isa(1, cpu::detect_isa());
  const auto w = be->make_linear(
      tv, DType::BF16, {{"mr", 13}, {"np", 2}, {"kc", 1024}, {"mc", 91}, {"nc", 512}, {"gnp", 4}, {"fma", 1}});
  std::vector<float> batched(static_cast<std::size_t>(m) * n), solo(static_cast<std::size_t>(n));
  be->linear(*w, x.data(), m, batched.data());
  be->linear(*w, x.data(), 1, solo.data());
  // Same values within bf16 tolerance, but (with vdpbf16ps) not the same bits.
  for (int j = 0; j < n; ++j) EXPECT_NEAR(solo[j], batched[j], 1e-3 * (1 + std::fabs(solo[j])));
  if (cpu::detect_isa() == cpu::Isa::Avx512Bf16) {
    EXPECT_FALSE(same_bits(solo.data(), batched.data(), n));
  }
  be->set_batch_invariant(true);
  be->linear(*w, x.data(), m, batched.data());
  EXPECT_TRUE(same_bits(solo.data(), batched.data(), n));
}

}  // namespace
}  // namespace llmport::test
