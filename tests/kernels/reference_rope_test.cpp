// Reference RoPE and q/k norm ordering against TRAPS.md values (#3, #6).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "llmport/kernels.hpp"

namespace llmport {
namespace {

std::vector<float> default_inv_freq(int head_dim, double theta) {
  std::vector<float> f(static_cast<std::size_t>(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i)
    f[static_cast<std::size_t>(i)] = static_cast<float>(std::pow(theta, -2.0 * i / head_dim));
  return f;
}

// TRAPS #3: rotate-half pairs (i, i + d/2), not interleaved (2i, 2i+1).
TEST(ReferenceRope, RotateHalfPairingValues) {
  auto be = make_backend("reference");
  std::vector<float> q{1, 2, 3, 4, 5, 6, 7, 8};
  const auto inv = default_inv_freq(8, 1e4);
  const int pos = 1;
  be->rope(q.data(), 1, 1, 8, &pos, inv.data());
  const float want[] = {-3.6671f, 1.3910f, 2.9299f, 3.9920f, 3.5430f, 6.1697f, 7.0296f, 8.0040f};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(q[static_cast<std::size_t>(i)], want[i], 1e-4) << i;
}

TEST(ReferenceRope, PositionZeroIsIdentityAndEachHeadRotatesAlike) {
  auto be = make_backend("reference");
  std::vector<float> x(2 * 3 * 8);  // [2 tokens, 3 heads, 8]
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 8 + 1);
  const auto inv = default_inv_freq(8, 1e4);
  const int pos[2] = {0, 1};
  be->rope(x.data(), 2, 3, 8, pos, inv.data());
  for (int h = 0; h < 3; ++h)
    for (int d = 0; d < 8; ++d) {
      EXPECT_FLOAT_EQ(x[static_cast<std::size_t>(h * 8 + d)], static_cast<float>(d + 1));
      // token 1, every head: the TRAPS #3 row
      EXPECT_NEAR(x[static_cast<std::size_t>(24 + h * 8 + d)], x[24 + static_cast<std::size_t>(d)], 0);
    }
  EXPECT_NEAR(x[24], -3.6671f, 1e-4);
}

// TRAPS #6: Qwen3 per-head RMSNorm of q/k BEFORE RoPE.
TEST(ReferenceRope, QkNormThenRopeValues) {
  auto be = make_backend("reference");
  const std::vector<float> w{1, 1, 2, 2};
  const auto inv = default_inv_freq(4, 1e4);
  const int pos = 1;
  std::vector<float> a{1, 2, 3, 4};
  be->rmsnorm(a.data(), w.data(), a.data(), 1, 4, 1e-12f);
  be->rope(a.data(), 1, 1, 4, &pos, inv.data());
  const float want[] = {-1.6463f, 0.7010f, 1.4910f, 2.9283f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(a[static_cast<std::size_t>(i)], want[i], 1e-4) << i;

  std::vector<float> b{1, 2, 3, 4};  // the wrong order gives different values
  be->rope(b.data(), 1, 1, 4, &pos, inv.data());
  be->rmsnorm(b.data(), w.data(), b.data(), 1, 4, 1e-12f);
  const float wrong[] = {-0.7245f, 0.7157f, 1.7983f, 2.9356f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(b[static_cast<std::size_t>(i)], wrong[i], 1e-4) << i;
}

}  // namespace
}  // namespace llmport
