// Teacher-forced step comparison: top-1 agreement, top-k inclusion both ways, and
// KL(reference || engine), full or coarsened to the reference top-k plus a "rest" bucket.
// The plain truncated sum over the top-k is never used: it goes negative when a fault
// sharpens the engine's distribution (e.g. a logit scale > 1).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "llmport/error.hpp"
#include "llmport/verify.hpp"

namespace llmport {

double kl_full(std::span<const float> reference_logits, std::span<const float> engine_logits) {
  if (reference_logits.size() != engine_logits.size())
    throw UsageError("KL: reference has " + std::to_string(reference_logits.size()) +
                     " logits, engine " + std::to_string(engine_logits.size()));
  const double lse_p = log_sum_exp(reference_logits);
  const double lse_q = log_sum_exp(engine_logits);
  double kl = 0.0;
  for (std::size_t i = 0; i < reference_logits.size(); ++i) {
    const double lp = static_cast<double>(reference_logits[i]) - lse_p;
    const double lq = static_cast<double>(engine_logits[i]) - lse_q;
    const double p = std::exp(lp);
    if (p > 0.0) kl += p * (lp - lq);
  }
  return kl;
}

double kl_full_within_print(std::span<const float> reference_logits, std::span<const float> engine_logits,
                            double half_unit) {
  const double printed = kl_full(reference_logits, engine_logits);
  if (!(half_unit > 0.0) || !std::isfinite(half_unit)) return printed;
  const double lse_p = log_sum_exp(reference_logits);
  double c = 0.0;
  for (std::size_t i = 0; i < reference_logits.size(); ++i)
    c += std::exp(static_cast<double>(reference_logits[i]) - lse_p) *
         (static_cast<double>(reference_logits[i]) - static_cast<double>(engine_logits[i]));
  std::vector<float> moved(reference_logits.size());
  for (std::size_t i = 0; i < moved.size(); ++i) {
    const double l = reference_logits[i];
    moved[i] = static_cast<float>(std::clamp(static_cast<double>(engine_logits[i]) + c, l - half_unit, l + half_unit));
  }
  return std::max(0.0, std::min(printed, kl_full(moved, engine_logits)));
}

namespace {

// Walks the reference's top-k ids with both log-probabilities, f(id, lp, lq), given the two
// logsumexps. Stops at an id outside the engine's vocabulary and returns its entry (else
// nullptr).
template <class F>
const TopEntry* for_each_top(const StepRecord& reference, std::span<const float> engine_logits, double lse_p,
                             double lse_q, int k, F&& f) {
  const int n = std::min(k, static_cast<int>(reference.top.size()));
  for (int i = 0; i < n; ++i) {
    const TopEntry& t = reference.top[static_cast<std::size_t>(i)];
    if (t.id < 0 || static_cast<std::size_t>(t.id) >= engine_logits.size()) return &t;
    f(t.id, static_cast<double>(t.logit) - lse_p,
      static_cast<double>(engine_logits[static_cast<std::size_t>(t.id)]) - lse_q);
  }
  return nullptr;
}

// The engine's top-k ids (engine_top, descending) that the reference's first k entries
// leave out, as engine probabilities. The reference says each holds at most its k-th
// entry's probability (its list is the largest logits), which the rest bucket alone cannot
// see.
std::vector<double> unlisted_engine_top(const StepRecord& reference, std::span<const TopEntry> engine_top,
                                        double lse_q, int k) {
  const std::size_t n = std::min(static_cast<std::size_t>(std::max(k, 0)), reference.top.size());
  std::vector<double> q;
  for (const TopEntry& e : engine_top) {
    const bool listed = std::any_of(reference.top.begin(), reference.top.begin() + static_cast<std::ptrdiff_t>(n),
                                    [&](const TopEntry& r) { return r.id == e.id; });
    if (!listed) q.push_back(std::exp(static_cast<double>(e.logit) - lse_q));
  }
  return q;
}

// The rest bucket's KL, rest_p || rest_q, with the engine's unlisted top ids split out
// where the reference's bound `cap` (its k-th probability) binds, at the reference's most
// favourable values: each such id gets p = min(cap, the proportional share rest_p q /
// rest_q), largest q first (a capped id raises the others' share). Ids whose share fits
// under the cap cost nothing (proportional splits keep the KL), so an honest reference
// whose 6th id the engine ranks 5th adds ~0; fillers far below the engine's own top ids add
// what their mass misses.
double rest_kl(double rest_p, double rest_q, std::span<const double> unlisted, double cap) {
  double kl = 0.0;
  for (double q : unlisted) {
    if (!(rest_p > 0.0 && rest_q > 0.0 && q > 0.0) || rest_p * q <= cap * rest_q) break;
    kl += cap > 0.0 ? cap * std::log(cap / q) : 0.0;
    rest_p = std::max(0.0, rest_p - cap);
    rest_q = std::max(0.0, rest_q - q);
  }
  rest_q = std::clamp(rest_q, 1e-300, 1.0);
  if (rest_p > 0.0) kl += rest_p * std::log(rest_p / rest_q);
  return kl;
}

// The coarsened KL with the reference's logsumexp taken as logsumexp - shift (its
// log-probabilities raised by shift) and, with within_print, each top log-probability
// moved toward the engine's by up to its logit's own printed half unit; lse_q is the
// engine's logsumexp, `unlisted` unlisted_engine_top's. shift = 0 without within_print is
// kl_coarsened's formula.
double coarse_kl(const StepRecord& reference, std::span<const float> engine_logits, double lse_q, int k,
                 double shift, bool within_print, std::span<const double> unlisted) {
  if (!reference.logsumexp)
    throw UsageError("KL: the reference step has no logsumexp (needed for the coarsened KL)");
  double kl = 0.0, p5 = 0.0, q5 = 0.0;
  std::size_t i = 0;  // for_each_top walks the top list in order
  auto add = [&](int, double lp, double lq) {
    const double slack = within_print ? reference.top_half_unit(i++) : 0.0;
    if (slack > 0.0 && std::isfinite(slack)) lp = std::clamp(lq, lp - slack, lp + slack);
    const double p = std::exp(lp);
    p5 += p;
    q5 += std::exp(lq);
    kl += p * (lp - lq);
  };
  const TopEntry* outside = for_each_top(reference, engine_logits, *reference.logsumexp - shift, lse_q, k, add);
  if (outside)
    throw UsageError("KL: reference top id " + std::to_string(outside->id) + " outside the engine vocabulary (" +
                     std::to_string(engine_logits.size()) + ")");
  // The rest bucket. The reference's logsumexp is float32, so P5 may exceed 1 by rounding;
  // clamp both masses into [0, 1] and give the engine's rest a floor so a fully
  // concentrated engine gives a large finite KL instead of inf.
  const double rest_p = std::clamp(1.0 - p5, 0.0, 1.0);
  const double rest_q = std::clamp(1.0 - q5, 0.0, 1.0);
  // The cap: the k-th entry's largest probability the digits allow (favourable to a pass).
  double cap = 0.0;
  if (const std::size_t n = std::min(static_cast<std::size_t>(std::max(k, 0)), reference.top.size()); n > 0) {
    const double hu = within_print ? reference.top_half_unit(n - 1) : 0.0;
    cap = std::exp(static_cast<double>(reference.top[n - 1].logit) + (std::isfinite(hu) ? hu : 0.0) -
                   (*reference.logsumexp - shift));
  }
  return kl + rest_kl(rest_p, rest_q, unlisted, std::min(cap, 1.0));
}

// kl_coarsened_within_print given the engine's logsumexp and unlisted top ids.
double coarse_kl_within_print(const StepRecord& reference, std::span<const float> engine_logits, double lse_q,
                              int k, std::span<const double> unlisted) {
  const double h = reference.lse_half_unit;
  if (!(h >= 0.0 && std::isfinite(h))) return coarse_kl(reference, engine_logits, lse_q, k, 0.0, false, unlisted);
  auto kl = [&](double shift) { return coarse_kl(reference, engine_logits, lse_q, k, shift, true, unlisted); };
  const double at_zero = std::max(0.0, kl(0.0));  // a KL; below 0 only by rounding
  if (h == 0.0) return at_zero;
  // Golden-section search of the logsumexp over [-h, h] (each top logit already at its best
  // within its own half unit): the KL is smooth and, over a few print units,
  // single-troughed. Every point evaluated is a reference the printed digits allow, so a
  // search that misses the trough only returns a larger KL (the gate errs toward FAIL).
  const double g = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = -h, b = h;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = kl(x1), f2 = kl(x2);
  for (int it = 0; it < 60; ++it) {
    if (f1 < f2) {
      b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a), f1 = kl(x1);
    } else {
      a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a), f2 = kl(x2);
    }
  }
  return std::max(0.0, std::min({at_zero, f1, f2, kl(-h), kl(h)}));
}

}  // namespace

double kl_coarsened(const StepRecord& reference, std::span<const float> engine_logits, int k) {
  const double lse_q = log_sum_exp(engine_logits);
  const std::vector<double> unlisted = unlisted_engine_top(reference, top_k(engine_logits, k), lse_q, k);
  return coarse_kl(reference, engine_logits, lse_q, k, 0.0, false, unlisted);
}

double kl_coarsened_within_print(const StepRecord& reference, std::span<const float> engine_logits, int k) {
  const double lse_q = log_sum_exp(engine_logits);
  const std::vector<double> unlisted = unlisted_engine_top(reference, top_k(engine_logits, k), lse_q, k);
  return coarse_kl_within_print(reference, engine_logits, lse_q, k, unlisted);
}

std::optional<KlBreakdown> kl_breakdown(const StepRecord& reference, std::span<const float> engine_logits, int k) {
  const std::optional<double> lse_p = reference.logits.empty() ? reference.logsumexp : log_sum_exp(reference.logits);
  if (!lse_p || reference.top.empty()) return std::nullopt;
  KlBreakdown b;
  double p5 = 0.0, q5 = 0.0;
  const TopEntry* outside =
      for_each_top(reference, engine_logits, *lse_p, log_sum_exp(engine_logits), k, [&](int id, double lp, double lq) {
        p5 += std::exp(lp);
        q5 += std::exp(lq);
        if (std::abs(lp - lq) > b.max_log_prob_diff) b.max_log_prob_diff = std::abs(lp - lq), b.worst_id = id;
      });
  if (outside) return std::nullopt;
  b.reference_rest = 1.0 - p5;
  b.engine_rest = 1.0 - q5;
  return b;
}

KlKind kl_kind_for(std::span<const StepRecord> reference) {
  if (reference.empty()) throw UsageError("no reference steps: the KL gate cannot be computed");
  const auto no_logits = std::ranges::find_if(reference, [](const StepRecord& s) { return s.logits.empty(); });
  if (no_logits == reference.end()) return KlKind::Full;
  const auto no_lse = std::ranges::find_if(reference, [](const StepRecord& s) { return !s.logsumexp; });
  if (no_lse == reference.end()) return KlKind::Coarsened;
  const auto neither =
      std::ranges::find_if(reference, [](const StepRecord& s) { return s.logits.empty() && !s.logsumexp; });
  if (neither != reference.end())
    throw UsageError("step " + std::to_string(neither - reference.begin()) +
                     " has neither full logits nor a logsumexp: the KL gate cannot be computed");
  // Each step has one of them, but no kind covers every step.
  throw UsageError("step " + std::to_string(no_logits - reference.begin()) + " has no full logits and step " +
                   std::to_string(no_lse - reference.begin()) +
                   " no logsumexp: the KL gate needs one kind on every step");
}

TeacherForcedStep compare_step(int step, const StepRecord& reference, std::span<const float> engine_logits,
                               KlKind kind, int k) {
  TeacherForcedStep r;
  r.step = step;
  r.reference_token = reference.top.empty() ? reference.token : reference.top[0].id;
  r.engine_top = top_k(engine_logits, k);
  r.reference_top = reference.top;
  if (r.reference_top.size() > static_cast<std::size_t>(k)) r.reference_top.resize(static_cast<std::size_t>(k));
  r.engine_top1 = r.engine_top.empty() ? -1 : r.engine_top[0].id;
  bool finite = true;
  for (float v : engine_logits)
    if (!std::isfinite(v)) finite = false;
  r.top1_agree = finite && r.engine_top1 == r.reference_token;
  auto in = [k](const std::vector<TopEntry>& top, int id) {
    for (int i = 0; i < std::min(k, static_cast<int>(top.size())); ++i)
      if (top[static_cast<std::size_t>(i)].id == id) return true;
    return false;
  };
  r.engine_in_reference_top = finite && in(r.reference_top, r.engine_top1);
  r.reference_in_engine_top = finite && in(r.engine_top, r.reference_token);
  // Full logits wherever the reference has them, whatever the run's kind.
  r.full_vocabulary = kind == KlKind::Full || reference.logits.size() == engine_logits.size();
  if (!finite) {
    r.kl = r.kl_within_print = std::numeric_limits<double>::infinity();
  } else if (r.full_vocabulary) {
    r.kl = kl_full(reference.logits, engine_logits);
    // The full logits were printed with the top list's digits (the reader holds the two
    // to one another): their half unit is the step's.
    r.kl_within_print = kl_full_within_print(reference.logits, engine_logits, reference.logit_half_unit);
  } else {
    // One top-k and one logsumexp of the engine's logits serve both coarsened KLs.
    const double lse_q = log_sum_exp(engine_logits);
    const std::vector<double> unlisted = unlisted_engine_top(reference, r.engine_top, lse_q, k);
    r.kl = coarse_kl(reference, engine_logits, lse_q, k, 0.0, false, unlisted);
    r.kl_within_print = coarse_kl_within_print(reference, engine_logits, lse_q, k, unlisted);
  }
  return r;
}

}  // namespace llmport
