// Comparator unit tests: top-k ties, the free-running rules (incl. unequal lengths and
// empty generations), the full and coarsened KL, cosine statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "llmport/error.hpp"
#include "llmport/records.hpp"
#include "llmport/verify.hpp"

namespace llmport {
namespace {

StepRecord step(int token, std::vector<int> top_ids) {
  StepRecord s;
  s.token = token;
  float l = 10.0f;
  for (int id : top_ids) s.top.push_back({id, l -= 1.0f});
  return s;
}

TEST(TopK, TiesBreakTowardSmallerId) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 3.0f};
  auto t = top_k(logits, 4);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].id, 1);
  EXPECT_EQ(t[1].id, 3);
  EXPECT_EQ(t[2].id, 5);
  EXPECT_EQ(t[3].id, 2);
  EXPECT_EQ(argmax_lowest_id(logits), 1);
}

TEST(TopK, NaNSortsLastAndMarksTheRecordNonFinite) {
  const std::vector<float> logits = {std::nanf(""), 0.5f, 0.25f};
  auto t = top_k(logits, 3);
  EXPECT_EQ(t[0].id, 1);
  EXPECT_EQ(t[2].id, 0);
  EXPECT_TRUE(StepRecord::from_logits(logits, false).non_finite());
  EXPECT_FALSE(StepRecord::from_logits(std::vector<float>{1.f, 2.f}, false).non_finite());
}

TEST(TopK, LogSumExpMatchesDirectSum) {
  const std::vector<float> logits = {0.1f, -2.0f, 3.5f, 1.25f};
  double s = 0;
  for (float v : logits) s += std::exp(static_cast<double>(v));
  EXPECT_NEAR(log_sum_exp(logits), std::log(s), 1e-12);
}

TEST(FreeRunning, IdenticalTokensPass) {
  std::vector<StepRecord> a = {step(5, {5, 6, 7, 8, 9}), step(6, {6, 5, 7, 8, 9})};
  auto r = check_free_running(a, a, 2);
  EXPECT_TRUE(r.pass);
  EXPECT_EQ(r.first_divergence, -1);
}

TEST(FreeRunning, DivergenceInsideBothTop5Passes) {
  std::vector<StepRecord> e = {step(5, {5, 6, 7, 8, 9}), step(6, {6, 7, 1, 2, 3}), step(1, {1, 2, 3, 4, 5})};
  std::vector<StepRecord> f = {step(5, {5, 6, 7, 8, 9}), step(7, {7, 6, 1, 2, 3}), step(99, {99, 98, 97, 96, 95})};
  auto r = check_free_running(e, f, 3);
  EXPECT_TRUE(r.pass) << r.message;
  EXPECT_EQ(r.first_divergence, 1);  // the later, unrelated steps are not compared
  EXPECT_EQ(r.engine_token, 6);
  EXPECT_EQ(r.reference_token, 7);
}

TEST(FreeRunning, EngineTokenOutsideReferenceTop5Fails) {
  std::vector<StepRecord> e = {step(42, {42, 7, 1, 2, 3})};
  std::vector<StepRecord> f = {step(7, {7, 1, 2, 3, 4})};
  auto r = check_free_running(e, f, 1);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.first_divergence, 0);
  EXPECT_NE(r.message.find("engine token is not in the reference top-5"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("42"), std::string::npos);
}

TEST(FreeRunning, ReferenceTokenOutsideEngineTop5Fails) {
  std::vector<StepRecord> e = {step(1, {1, 2, 3, 4, 5})};
  std::vector<StepRecord> f = {step(9, {9, 1, 2, 3, 4})};
  auto r = check_free_running(e, f, 1);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.message.find("reference token is not in the engine top-5"), std::string::npos) << r.message;
}

TEST(FreeRunning, UnequalLengthsFail) {
  std::vector<StepRecord> a = {step(5, {5, 6, 7, 8, 9}), step(6, {6, 5, 7, 8, 9})};
  std::vector<StepRecord> b = {step(5, {5, 6, 7, 8, 9})};
  auto r1 = check_free_running(b, a, 2);  // engine short
  EXPECT_FALSE(r1.pass);
  EXPECT_NE(r1.message.find("unequal lengths"), std::string::npos) << r1.message;
  auto r2 = check_free_running(a, b, 2);  // reference short
  EXPECT_FALSE(r2.pass);
  // Both sides equal but shorter than asked: still a failure.
  auto r3 = check_free_running(b, b, 2);
  EXPECT_FALSE(r3.pass);
  // A side longer than asked is unequal too.
  auto r4 = check_free_running(a, a, 1);
  EXPECT_FALSE(r4.pass);
}

TEST(FreeRunning, EmptyGenerationFails) {
  std::vector<StepRecord> a = {step(5, {5, 6, 7, 8, 9})};
  std::vector<StepRecord> none;
  auto r1 = check_free_running(none, a, 1);
  EXPECT_FALSE(r1.pass);
  EXPECT_NE(r1.message.find("empty generation"), std::string::npos) << r1.message;
  EXPECT_FALSE(check_free_running(a, none, 1).pass);
  EXPECT_FALSE(check_free_running(none, none, 0).pass);  // nothing asked, nothing produced
}

TEST(FreeRunning, NonFiniteEngineLogitsFail) {
  std::vector<float> bad = {std::nanf(""), 1.0f, 0.0f};
  std::vector<StepRecord> e = {StepRecord::from_logits(bad, false)};
  std::vector<StepRecord> f = {StepRecord::from_logits(std::vector<float>{0.f, 1.f, 0.f}, false)};
  auto r = check_free_running(e, f, 1);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.message.find("not finite"), std::string::npos);
}

std::vector<float> random_logits(std::mt19937& rng, int n, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Kl, FullKlMatchesHandComputedValue) {
  // P = softmax([0, ln 3]) = [1/4, 3/4]; Q = softmax([0, 0]) = [1/2, 1/2].
  const std::vector<float> p = {0.0f, static_cast<float>(std::log(3.0))};
  const std::vector<float> q = {0.0f, 0.0f};
  const double expect = 0.25 * std::log(0.25 / 0.5) + 0.75 * std::log(0.75 / 0.5);
  EXPECT_NEAR(kl_full(p, q), expect, 1e-7);
  EXPECT_NEAR(kl_full(p, p), 0.0, 1e-12);
}

TEST(Kl, CoarsenedKlMatchesTheFormula) {
  // Vocab 7, top-2 coarsening done by hand.
  const std::vector<float> ref = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, -2.0f, 0.25f};
  const std::vector<float> eng = {1.5f, 1.2f, 0.5f, 0.1f, -1.0f, -2.0f, 0.0f};
  StepRecord r = StepRecord::from_logits(ref, false, 2);
  const double lp = log_sum_exp(ref), lq = log_sum_exp(eng);
  const double p0 = std::exp(2.0 - lp), p1 = std::exp(1.0 - lp);
  const double q0 = std::exp(1.5 - lq), q1 = std::exp(static_cast<double>(1.2f) - lq);
  const double expect = p0 * std::log(p0 / q0) + p1 * std::log(p1 / q1) +
                        (1 - p0 - p1) * std::log((1 - p0 - p1) / (1 - q0 - q1));
  EXPECT_NEAR(kl_coarsened(r, eng, 2), expect, 1e-9);
}

TEST(Kl, CoarsenedKlIsNonNegativeUnderSharpeningWhereTheTruncatedSumIsNot) {
  // A uniform logit scale > 1 sharpens the engine: the plain top-5 sum goes negative.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    auto ref = random_logits(rng, 300, 2.0f);
    std::vector<float> eng = ref;
    for (auto& v : eng) v *= 1.25f;
    StepRecord r = StepRecord::from_logits(ref, false);
    const double coarse = kl_coarsened(r, eng);
    const double full = kl_full(ref, eng);
    EXPECT_GE(coarse, 0.0);
    EXPECT_LE(coarse, full + 1e-12);  // a coarsening never increases a KL
    double truncated = 0.0;
    const double lp = log_sum_exp(ref), lq = log_sum_exp(eng);
    for (const auto& t : r.top)
      truncated += std::exp(t.logit - lp) * ((t.logit - lp) - (eng[static_cast<std::size_t>(t.id)] - lq));
    if (trial == 0) {
      EXPECT_LT(truncated, 0.0);
    }
  }
}

TEST(Kl, CoarsenedKlIsZeroForIdenticalDistributionsAndNeedsLogsumexp) {
  std::mt19937 rng(3);
  auto ref = random_logits(rng, 100, 3.0f);
  StepRecord r = StepRecord::from_logits(ref, false);
  EXPECT_NEAR(kl_coarsened(r, ref), 0.0, 1e-12);
  r.logsumexp.reset();
  EXPECT_THROW(kl_coarsened(r, ref), Error);
}

// A reference printed with few digits holds its logsumexp and logits only to their half
// units: the KL the gate holds to the bound lets them move that far and no further.
TEST(Kl, WithinPrintMovesTheValuesByTheirHalfUnitsAndNoFurther) {
  std::mt19937 rng(11);
  const auto logits = random_logits(rng, 200, 4.0f);
  const StepRecord exact = StepRecord::from_logits(logits, false);
  const double h = 1e-4;
  auto printed = [&](double lse_error, double lse_half_unit) {
    StepRecord r = exact;
    r.logsumexp = *exact.logsumexp + lse_error;
    r.lse_half_unit = lse_half_unit;
    return r;
  };
  // No digits missing: the same value as kl_coarsened, bit for bit.
  const StepRecord none = printed(0.6 * h, 0.0);
  EXPECT_EQ(kl_coarsened_within_print(none, logits), kl_coarsened(none, logits));
  // An error inside the half unit: the engine that equals the reference's computation meets
  // it exactly, though the printed value alone gives a KL.
  for (double e : {0.6 * h, -0.6 * h}) {
    const StepRecord r = printed(e, h);
    EXPECT_GT(kl_coarsened(r, logits), 1e-12) << e;
    EXPECT_NEAR(kl_coarsened_within_print(r, logits), 0.0, 1e-14) << e;
  }
  // An error of 3h: the best allowed value is 2h off, never closer.
  const StepRecord two_h = printed(2.0 * h, 0.0);
  EXPECT_NEAR(kl_coarsened_within_print(printed(3.0 * h, h), logits), kl_coarsened(two_h, logits),
              1e-6 * kl_coarsened(two_h, logits));
  // Top logits each rounded within their half unit: met exactly; one moved 3 half units:
  // it stays 2 off (the rest of the step being exact).
  StepRecord rounded = exact;
  rounded.logit_half_unit = h;
  for (std::size_t i = 0; i < rounded.top.size(); ++i) rounded.top[i].logit += static_cast<float>((i % 2 ? 0.7 : -0.7) * h);
  EXPECT_GT(kl_coarsened(rounded, logits), 1e-12);
  EXPECT_NEAR(kl_coarsened_within_print(rounded, logits), 0.0, 1e-12);
  // (at 100 h, where float32's rounding of the moved logit is negligible beside the move)
  StepRecord far = exact, far_2h = exact;
  far.logit_half_unit = 100 * h;
  far.top[1].logit += static_cast<float>(300 * h);
  far_2h.top[1].logit += static_cast<float>(200 * h);
  EXPECT_NEAR(kl_coarsened_within_print(far, logits), kl_coarsened(far_2h, logits), 1e-3 * kl_coarsened(far_2h, logits));
  // compare_step carries both: the printed values' KL and the gate's.
  const TeacherForcedStep st = compare_step(0, printed(3.0 * h, h), logits, KlKind::Coarsened);
  EXPECT_EQ(st.kl, kl_coarsened(printed(3.0 * h, h), logits));
  EXPECT_EQ(st.kl_within_print, kl_coarsened_within_print(printed(3.0 * h, h), logits));
}

// A reference whose entries 2-5 are ids the model ranks far lower (their own logits, the
// logsumexp honest, so every listed value is true and the logsumexp within its top list's
// ceiling): the engine's real 2nd-5th ids sat in the rest bucket, which held the same mass
// on both sides, and the coarsened KL compared the top-1 alone (0 here). The list says
// every unlisted id holds at most its 5th entry's probability; the engine's top ids get
// their own bucket at the most favourable value that allows.
TEST(Kl, UnlistedEngineTopIdsAboveTheReferencesKthAreNotHiddenInTheRest) {
  std::vector<float> logits(64);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = 8.0f - 0.02f * static_cast<float>(i);
  const StepRecord honest = StepRecord::from_logits(logits, false);
  EXPECT_NEAR(kl_coarsened(honest, logits), 0.0, 1e-12);
  EXPECT_NEAR(kl_coarsened_within_print(honest, logits), 0.0, 1e-12);
  StepRecord fillers = honest;
  for (int i = 1; i < 5; ++i) fillers.top[static_cast<std::size_t>(i)] = {20 + i, logits[static_cast<std::size_t>(20 + i)]};
  const double lse = *honest.logsumexp;
  auto p = [&](std::size_t i) { return std::exp(static_cast<double>(logits[i]) - lse); };
  // The 59 ids beside the list, each at most its 5th, can hold the rest: a top list the
  // logsumexp ceiling of check_record_fits_model accepts.
  double rest = 0.0;
  for (std::size_t i = 1; i < 64; ++i)
    if (i < 21 || i > 24) rest += p(i);
  const double cap = p(24);
  EXPECT_GE(59.0 * cap, rest);
  // Every listed value is true (p = q there); the engine's ids 1-4, unlisted, each get at
  // most the 5th's probability, largest first, the rest taking what is left.
  double want = 0.0, rest_p = rest, rest_q = rest;
  for (std::size_t i = 1; i <= 4 && rest_p * p(i) > cap * rest_q; ++i) {
    want += cap * std::log(cap / p(i));
    rest_p -= cap;
    rest_q -= p(i);
  }
  want += rest_p * std::log(rest_p / rest_q);
  EXPECT_GT(want, 1e-3);  // 500x the fp32 bound
  EXPECT_NEAR(kl_coarsened(fillers, logits), want, 1e-9);
  EXPECT_NEAR(kl_coarsened_within_print(fillers, logits), want, 1e-9);
}

TEST(Kl, KindNeedsFullLogitsOnEveryStep) {
  std::vector<StepRecord> steps = {StepRecord::from_logits(std::vector<float>{1, 2}, true),
                                   StepRecord::from_logits(std::vector<float>{1, 2}, false)};
  EXPECT_EQ(kl_kind_for(steps), KlKind::Coarsened);
  steps[1].logits = {1, 2};
  EXPECT_EQ(kl_kind_for(steps), KlKind::Full);
  steps[0].logsumexp.reset();
  steps[0].logits.clear();
  auto message = [&] {
    try {
      (void)kl_kind_for(steps);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(), "step 0 has neither full logits nor a logsumexp: the KL gate cannot be computed");
  // Each step has one kind, no kind every step: said as such, not as a step holding neither.
  steps[0].logits = {1, 2};
  steps[1].logits.clear();
  EXPECT_EQ(message(), "step 1 has no full logits and step 0 no logsumexp: the KL gate needs one kind on every step");
}

TEST(Kl, CompareStepChecksTop5BothWays) {
  const std::vector<float> ref = {5, 4, 3, 2, 1, 0, -1, -2};
  StepRecord r = StepRecord::from_logits(ref, false);
  // Engine prefers id 7 strongly: its top-1 is outside the reference top-5.
  std::vector<float> eng = ref;
  eng[7] = 10;
  auto s = compare_step(3, r, eng, KlKind::Coarsened);
  EXPECT_EQ(s.step, 3);
  EXPECT_EQ(s.engine_top1, 7);
  EXPECT_EQ(s.reference_token, 0);
  EXPECT_FALSE(s.top1_agree);
  EXPECT_FALSE(s.engine_in_reference_top);
  EXPECT_TRUE(s.reference_in_engine_top);
  EXPECT_FALSE(s.pass());
  auto same = compare_step(0, r, ref, KlKind::Coarsened);
  EXPECT_TRUE(same.pass());
  EXPECT_TRUE(same.top1_agree);
  EXPECT_NEAR(same.kl, 0.0, 1e-12);
}

TEST(Cosine, ZeroNormSafe) {
  const float z[3] = {0, 0, 0}, a[3] = {1, 2, 3}, b[3] = {-1, -2, -3};
  EXPECT_EQ(cosine(z, z, 3), 1.0);
  EXPECT_EQ(cosine(a, z, 3), 0.0);
  EXPECT_NEAR(cosine(a, a, 3), 1.0, 1e-15);
  EXPECT_NEAR(cosine(a, b, 3), -1.0, 1e-15);
}

TEST(Cosine, PerPositionStatistics) {
  // 4 positions of dim 2: cosines 1, 0, 1, -1 (rows: same, orthogonal, same, opposite).
  const float a[] = {1, 0, 1, 0, 0, 2, 3, 0};
  const float b[] = {2, 0, 0, 1, 0, 5, -1, 0};
  auto s = compare_rows(a, b, 4, 2);
  EXPECT_EQ(s.n_rows, 4);
  EXPECT_DOUBLE_EQ(s.min, -1.0);
  EXPECT_DOUBLE_EQ(s.median, 0.5);
  EXPECT_DOUBLE_EQ(s.mean, 0.25);
  EXPECT_DOUBLE_EQ(s.p5, -1.0);
  EXPECT_DOUBLE_EQ(s.max_abs, 4.0);
  EXPECT_DOUBLE_EQ(s.mean_abs, (1 + 0 + 1 + 1 + 0 + 3 + 4 + 0.0) / 8);
  EXPECT_DOUBLE_EQ(s.max_rel, 4.0);  // ||(4, 0)|| / ||(-1, 0)||
  EXPECT_FALSE(s.has_nan);
}

TEST(Cosine, NaNIsFlaggedAndCountsAsWorst) {
  const float a[] = {1, std::nanf(""), 1, 1};
  const float b[] = {1, 1, 1, 1};
  auto s = compare_rows(a, b, 2, 2);
  EXPECT_TRUE(s.has_nan);
  EXPECT_DOUBLE_EQ(s.min, -1.0);
}

TEST(Cosine, NaNOnBothSidesReadsAsTheWorstErrorNotAsNone) {
  // A layer whose weights produce NaN gives NaN in engine and reference alike: the relative
  // error and the norm deviation must read inf (the worst), not 0 (NaN compares false).
  const float a[] = {1, 1, std::nanf(""), 1};
  const float b[] = {1, 1, std::nanf(""), 1};
  auto s = compare_rows(a, b, 2, 2);
  EXPECT_TRUE(s.has_nan);
  EXPECT_EQ(s.max_rel, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.max_norm_dev, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.whole_rel, std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace llmport
