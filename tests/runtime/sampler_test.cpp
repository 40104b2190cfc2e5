// Sampler: greedy ties, repetition penalty (CTRL rule), temperature / top-k / top-p / min-p
// supports, seeded determinism, and parameter validation.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "llmport/error.hpp"
#include "llmport/sampler.hpp"

namespace llmport {
namespace {

std::vector<float> logp(std::initializer_list<double> probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

std::map<int, int> histogram(const SamplingParams& p, const std::vector<float>& logits, int n,
                             const std::vector<int>& history = {}) {
  Sampler s(p);
  std::map<int, int> h;
  for (int i = 0; i < n; ++i) ++h[s.sample(logits, history)];
  return h;
}

TEST(Sampler, GreedyTiesGoToTheSmallerId) {
  Sampler s(SamplingParams{});
  EXPECT_EQ(s.sample(std::vector<float>{1, 3, 3, 2}), 1);
  EXPECT_EQ(argmax(std::vector<float>{-1, -1}), 0);
  const auto top = top_k_logits(std::vector<float>{0.5f, 2, 2, -1, 2}, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);
  EXPECT_EQ(top[1].first, 2);
  EXPECT_EQ(top[2].first, 4);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  SamplingParams p;
  p.repetition_penalty = 1.2;
  Sampler s(p);
  // 2.0 / 1.2 = 1.667 < 1.9: the seen id 0 loses.
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}, std::vector<int>{0, 0}), 1);
  // -1.0 * 1.2 = -1.2 < -1.1: the seen id 0 loses again.
  EXPECT_EQ(s.sample(std::vector<float>{-1.0f, -1.1f}, std::vector<int>{0}), 1);
  // Penalized once per distinct id: 2.0 / 1.2 = 1.667 still beats 1.6.
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.6f}, std::vector<int>{0, 0, 0}), 0);
}

TEST(Sampler, TemperatureSamplesTheSoftmax) {
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 7;
  const int n = 20000;
  const auto h = histogram(p, logp({0.5, 0.3, 0.2}), n);
  EXPECT_NEAR(h.at(0) / double(n), 0.5, 0.02);
  EXPECT_NEAR(h.at(1) / double(n), 0.3, 0.02);
  EXPECT_NEAR(h.at(2) / double(n), 0.2, 0.02);
  // T = 0.5 squares the probabilities: 25:9:4 -> 0.658, 0.237, 0.105.
  p.temperature = 0.5;
  const auto h2 = histogram(p, logp({0.5, 0.3, 0.2}), n);
  EXPECT_NEAR(h2.at(0) / double(n), 25.0 / 38, 0.02);
  EXPECT_NEAR(h2.at(2) / double(n), 4.0 / 38, 0.02);
}

// The temperature's limits: T -> 0 is greedy and T -> inf is uniform (softmax(l / T)); a
// T whose reciprocal overflows float (1e-45) or that overflows float itself (1e39) must
// sample those limits, not NaN garbage. A non-finite T is a usage error.
TEST(Sampler, ExtremeTemperaturesSampleTheirLimits) {
  const auto l = logp({0.5, 0.3, 0.2});
  SamplingParams p;
  p.seed = 3;
  p.temperature = 1e-45;
  auto h = histogram(p, l, 2000);
  EXPECT_EQ(h.size(), 1u);
  EXPECT_EQ(h.begin()->first, 0);  // the argmax only
  p.temperature = 1e39;
  h = histogram(p, l, 30000);
  ASSERT_EQ(h.size(), 3u);
  for (const auto& [id, count] : h) EXPECT_NEAR(count / 30000.0, 1.0 / 3, 0.02) << id;
  p.temperature = INFINITY;
  EXPECT_THROW(Sampler{p}, UsageError);
  p.temperature = NAN;
  EXPECT_THROW(Sampler{p}, UsageError);
}

TEST(Sampler, TopKTopPMinPRestrictTheSupport) {
  const auto l = logp({0.4, 0.3, 0.2, 0.1});
  SamplingParams p;
  p.temperature = 1.0;
  p.top_k = 2;
  auto h = histogram(p, l, 4000);
  EXPECT_EQ((std::set<int>{h.begin()->first, h.rbegin()->first}), (std::set<int>{0, 1}));
  EXPECT_EQ(h.size(), 2u);
  EXPECT_NEAR(h[0] / 4000.0, 0.4 / 0.7, 0.03);  // renormalized over the kept ids

  p = SamplingParams{};
  p.temperature = 1.0;
  p.top_p = 0.65;  // 0.4 + 0.3 = 0.7 >= 0.65: ids {0, 1}
  h = histogram(p, l, 4000);
  EXPECT_EQ(h.size(), 2u);
  EXPECT_TRUE(h.count(0) && h.count(1));

  p = SamplingParams{};
  p.temperature = 1.0;
  p.min_p = 0.45;  // keep p >= 0.45 * 0.4 = 0.18: ids {0, 1, 2}
  h = histogram(p, l, 4000);
  EXPECT_EQ(h.size(), 3u);
  EXPECT_FALSE(h.count(3));
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDiffers) {
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 42;
  std::vector<float> l(50);
  for (std::size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(i % 7) * 0.3f;
  Sampler a(p), b(p);
  std::vector<int> sa, sb, sc;
  for (int i = 0; i < 64; ++i) {
    sa.push_back(a.sample(l));
    sb.push_back(b.sample(l));
  }
  EXPECT_EQ(sa, sb);
  p.seed = 43;
  Sampler c(p);
  for (int i = 0; i < 64; ++i) sc.push_back(c.sample(l));
  EXPECT_NE(sa, sc);
}

TEST(Sampler, InvalidParametersAreUsageErrors) {
  SamplingParams p;
  p.top_p = 0.0;
  EXPECT_THROW(Sampler{p}, UsageError);
  p = SamplingParams{};
  p.min_p = 1.5;
  EXPECT_THROW(Sampler{p}, UsageError);
  p = SamplingParams{};
  p.repetition_penalty = 0.0;
  EXPECT_THROW(Sampler{p}, UsageError);
  p = SamplingParams{};
  p.top_k = -1;
  EXPECT_THROW(Sampler{p}, UsageError);
}

}  // namespace
}  // namespace llmport
