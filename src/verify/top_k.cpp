// Top-k, greedy choice and logsumexp with the goldens' conventions (ties -> smaller id).
#include <algorithm>
#include <cmath>
#include <limits>

#include "llmport/records.hpp"

namespace llmport {

namespace {
// Strict order: larger logit first, ties toward the smaller id, NaN after everything.
bool before(float la, int ia, float lb, int ib) {
  const bool na = std::isnan(la), nb = std::isnan(lb);
  if (na != nb) return nb;
  if (!na && la != lb) return la > lb;
  return ia < ib;
}
}  // namespace

std::vector<TopEntry> top_k(std::span<const float> logits, int k) {
  const int n = static_cast<int>(logits.size());
  k = std::max(0, std::min(k, n));
  std::vector<TopEntry> top;  // [k] kept sorted
  top.reserve(static_cast<std::size_t>(k) + 1);
  for (int i = 0; i < n; ++i) {
    const float v = logits[static_cast<std::size_t>(i)];
    if (static_cast<int>(top.size()) == k) {
      if (k == 0 || !before(v, i, top.back().logit, top.back().id)) continue;
      top.pop_back();
    }
    auto it = std::find_if(top.begin(), top.end(),
                           [&](const TopEntry& e) { return before(v, i, e.logit, e.id); });
    top.insert(it, TopEntry{i, v});
  }
  return top;
}

int argmax_lowest_id(std::span<const float> logits) {
  auto t = top_k(logits, 1);
  return t.empty() ? -1 : t[0].id;
}

double log_sum_exp(std::span<const float> logits) {
  double m = -std::numeric_limits<double>::infinity();
  for (float v : logits) m = std::max(m, static_cast<double>(v));
  if (!std::isfinite(m)) return m;
  double s = 0.0;
  for (float v : logits) s += std::exp(static_cast<double>(v) - m);
  return m + std::log(s);
}

StepRecord StepRecord::from_logits(std::span<const float> logits, bool keep_logits, int k) {
  StepRecord r;
  r.top = top_k(logits, k);
  r.token = r.top.empty() ? -1 : r.top[0].id;
  r.logsumexp = log_sum_exp(logits);
  if (keep_logits) r.logits.assign(logits.begin(), logits.end());
  return r;
}

bool StepRecord::non_finite() const {
  for (const auto& e : top)
    if (!std::isfinite(e.logit)) return true;
  for (float v : logits)
    if (!std::isfinite(v)) return true;
  return logsumexp && !std::isfinite(*logsumexp);
}

std::vector<int> RecordSequence::tokens() const {
  std::vector<int> t;
  t.reserve(steps.size());
  for (const auto& s : steps) t.push_back(s.token);
  return t;
}

}  // namespace llmport
