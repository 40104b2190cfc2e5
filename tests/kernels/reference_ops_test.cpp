// Reference RMSNorm (eps, TRAPS #7), linear with bias, SwiGLU, add, softmax and the
// embedding lookup, each against a formula.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "llmport/error.hpp"
#include "llmport/kernels.hpp"

namespace llmport {
namespace {

TEST(ReferenceRmsnorm, EpsIsTakenFromTheCaller) {
  auto be = make_backend("reference");
  // Input RMS 0.02: eps 1e-5 vs 1e-6 changes the output scale by about 1% (TRAPS #7).
  std::vector<float> x(64, 0.02f), w(64, 1.0f), y5(64), y6(64);
  be->rmsnorm(x.data(), w.data(), y5.data(), 1, 64, 1e-5f);
  be->rmsnorm(x.data(), w.data(), y6.data(), 1, 64, 1e-6f);
  EXPECT_NEAR(y5[0], 0.02 / std::sqrt(0.0004 + 1e-5), 1e-6);
  EXPECT_NEAR(y6[0], 0.02 / std::sqrt(0.0004 + 1e-6), 1e-6);
  EXPECT_GT(y6[0] / y5[0] - 1.0, 0.01);
}

TEST(ReferenceRmsnorm, RowsAreIndependentAndWeighted) {
  auto be = make_backend("reference");
  const std::vector<float> x{3, 4, 0, 0, 1, -1};  // [3, 2]
  const std::vector<float> w{2, 0.5f};
  std::vector<float> y(6);
  be->rmsnorm(x.data(), w.data(), y.data(), 3, 2, 0.0f);
  const double r0 = std::sqrt(12.5);
  EXPECT_NEAR(y[0], 3 / r0 * 2, 1e-6);
  EXPECT_NEAR(y[1], 4 / r0 * 0.5, 1e-6);
  EXPECT_NEAR(y[4], 2.0, 1e-6);
  EXPECT_NEAR(y[5], -0.5, 1e-6);
}

TEST(ReferenceLinear, GemmAndGemvWithBias) {
  auto be = make_backend("reference");
  const std::vector<float> wv{1, 2, 3, 4, 5, 6};  // W [2, 3]
  const TensorView w = TensorView::f32(wv.data(), 2, 3, "w");
  auto lw = be->make_linear(w, DType::F32);
  EXPECT_EQ(lw->n_out, 2);
  EXPECT_EQ(lw->n_in, 3);
  const std::vector<float> x{1, 0, -1, 2, 1, 0};  // [2, 3]
  const std::vector<float> b{0.5f, -0.5f};
  std::vector<float> y(4);
  be->linear(*lw, x.data(), 2, y.data(), b.data());
  EXPECT_FLOAT_EQ(y[0], 1 - 3 + 0.5f);
  EXPECT_FLOAT_EQ(y[1], 4 - 6 - 0.5f);
  EXPECT_FLOAT_EQ(y[2], 2 + 2 + 0.5f);
  EXPECT_FLOAT_EQ(y[3], 8 + 5 - 0.5f);
  be->linear(*lw, x.data(), 1, y.data());
  EXPECT_FLOAT_EQ(y[0], -2.0f);
}

TEST(ReferenceLinear, WeightsRoundOnceToTheComputeDtype) {
  auto be = make_backend("reference");
  const std::vector<float> wv{1.00390625f};  // 1 + 2^-8: not a bf16 value (ties to even: 1.0)
  const TensorView w = TensorView::f32(wv.data(), 1, 1, "w");
  const float x = 1.0f;
  float y = 0;
  be->linear(*be->make_linear(w, DType::BF16), &x, 1, &y);
  EXPECT_FLOAT_EQ(y, 1.0f);
  be->linear(*be->make_linear(w, DType::F32), &x, 1, &y);
  EXPECT_FLOAT_EQ(y, 1.00390625f);
}

// The oracle's outputs must not depend on its thread count: provenance compares a golden's
// logits with the oracle's bit for bit (a copy of llmport's own output), and a threaded
// oracle that summed in another order would let such a copy through. 3 x 300 x 4096 is
// above the size at which reference::linear splits its output columns over threads.
TEST(ReferenceLinear, OutputsAreBitIdenticalAtEveryThreadCount) {
  const int m = 3, n = 300, k = 4096;
  std::vector<float> w(static_cast<std::size_t>(n) * k), x(static_cast<std::size_t>(m) * k), bias(n);
  uint32_t s = 12345;
  auto next = [&s] {
    s = s * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int>(s >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
  };
  for (auto& v : w) v = next();
  for (auto& v : x) v = next();
  for (auto& v : bias) v = next();
  std::vector<float> want;
  for (int threads : {1, 2, 3, 8}) {
    SCOPED_TRACE(threads);
    auto be = make_backend("reference", threads);
    EXPECT_EQ(be->threads(), threads);
    auto lw = be->make_linear(TensorView::f32(w.data(), n, k), DType::F32);
    std::vector<float> y(static_cast<std::size_t>(m) * n);
    be->linear(*lw, x.data(), m, y.data(), bias.data());
    if (want.empty()) {
      want = y;
      // Row 0, column 0 is the sequential fp32 sum (reference::linear's definition).
      float acc = 0.0f;
      for (int t = 0; t < k; ++t) acc += x[static_cast<std::size_t>(t)] * w[static_cast<std::size_t>(t)];
      EXPECT_EQ(y[0], acc + bias[0]);
    }
    EXPECT_EQ(y, want);
  }
}

TEST(ReferenceOps, SwigluAddSoftmax) {
  auto be = make_backend("reference");
  const std::vector<float> g{0, 1, -2}, u{3, 2, 1};
  std::vector<float> o(3);
  be->swiglu(g.data(), u.data(), o.data(), 3);
  EXPECT_FLOAT_EQ(o[0], 0.0f);
  EXPECT_NEAR(o[1], 1.0 / (1 + std::exp(-1.0)) * 2, 1e-6);
  EXPECT_NEAR(o[2], -2.0 / (1 + std::exp(2.0)), 1e-6);
  std::vector<float> a{1, 2};
  be->add(a.data(), g.data(), 2);
  EXPECT_FLOAT_EQ(a[1], 3.0f);
  std::vector<float> s{100, 100 + std::log(3.0f)};  // large values: max-subtracted
  softmax(s.data(), 2);
  EXPECT_NEAR(s[0], 0.25, 1e-5);
  EXPECT_NEAR(s[1], 0.75, 1e-5);
}

TEST(EmbeddingLookup, RowsAndRangeCheck) {
  const std::vector<uint16_t> table{f32_to_bf16(1.5f), f32_to_bf16(-2.0f), f32_to_bf16(0.25f),
                                    f32_to_bf16(8.0f)};  // [2, 2] bf16
  TensorView t;
  t.name = "embed";
  t.dtype = DType::BF16;
  t.shape = {2, 2};
  t.data = table.data();
  t.nbytes = 8;
  const int ids[3] = {1, 0, 1};
  std::vector<float> out(6);
  embedding_lookup(t, DType::BF16, ids, 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{0.25f, 8.0f, 1.5f, -2.0f, 0.25f, 8.0f}));
  const int bad = 2;
  EXPECT_THROW(embedding_lookup(t, DType::BF16, &bad, 1, out.data()), UsageError);
}

TEST(Backends, UnknownNameListsAvailable) {
  try {
    make_backend("gpu9000");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("reference"), std::string::npos);
  }
  EXPECT_EQ(make_backend("reference")->name(), "reference");
}

}  // namespace
}  // namespace llmport
