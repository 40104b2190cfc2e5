// The reference backend's level "fp64" (the copy-direction check's F, llmport/verify.hpp):
// the oracle's formulas with fp64 sums, each op's output rounded to fp32 once. Where an fp32
// sequential sum absorbs small terms, F keeps them, to the correctly rounded value.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "llmport/error.hpp"
#include "llmport/kernels.hpp"

namespace llmport {
namespace {

TEST(ReferenceFp64, LinearSumsInFp64AndRoundsOnce) {
  // One row: 1 followed by 4096 terms of 2^-25. fp32 sums 1 + 2^-25 back to 1 every time
  // (half an ulp of 1 is 2^-24); the exact sum is 1 + 2^-13, which fp32 holds exactly.
  const int k = 4097;
  std::vector<float> w(k, 0x1p-25f), x(k, 1.0f);
  w[0] = 1.0f;
  TensorView t;
  t.name = "w";
  t.dtype = DType::F32;
  t.shape = {1, k};
  t.data = w.data();
  t.nbytes = w.size() * sizeof(float);
  auto run = [&](const std::string& level) {
    auto be = make_backend_at("reference", level, 1);
    auto lw = be->make_linear(t, DType::F32);
    float y = 0;
    be->linear(*lw, x.data(), 1, &y);
    return y;
  };
  EXPECT_EQ(run("scalar"), 1.0f);
  EXPECT_EQ(run("fp64"), 1.0f + 0x1p-13f);
}

TEST(ReferenceFp64, RmsnormIsTheFp64ValueRoundedOnce) {
  auto be = make_backend_at("reference", "fp64", 1);
  const float x[3] = {3.0f, -4.0f, 0.0f}, w[3] = {1.0f, 1.0f, 1.0f};
  float y[3];
  be->rmsnorm(x, w, y, 1, 3, 0.0f);
  // rms = sqrt((9 + 16) / 3): y = x / rms, correctly rounded from fp64.
  const double rms = std::sqrt(25.0 / 3.0);
  EXPECT_EQ(y[0], static_cast<float>(3.0 / rms));
  EXPECT_EQ(y[1], static_cast<float>(-4.0 / rms));
  EXPECT_EQ(y[2], 0.0f);
}

TEST(ReferenceFp64, UnknownLevelsNameBoth) {
  try {
    make_backend_at("reference", "fp128", 1);
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("levels 'scalar' and 'fp64' (got 'fp128')"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace llmport
