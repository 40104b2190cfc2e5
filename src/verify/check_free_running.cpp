// Free-running token-set check, after vLLM tests/models/utils.py `check_logprobs_close`:
// greedy on both sides; at the first differing step each side's token must lie in the
// other's top-k, and then the comparison stops (the contexts differ from there on).
// Stricter than vLLM: both sides must produce exactly the requested, non-zero count.
#include <algorithm>

#include "llmport/verify.hpp"
#include "verify/format.hpp"

namespace llmport {

namespace {
bool in_top(const std::vector<TopEntry>& top, int id, int k) {
  const int n = std::min(k, static_cast<int>(top.size()));
  for (int i = 0; i < n; ++i)
    if (top[static_cast<std::size_t>(i)].id == id) return true;
  return false;
}
}  // namespace

FreeRunResult check_free_running(std::span<const StepRecord> engine,
                                 std::span<const StepRecord> reference, int n_expected, int k) {
  FreeRunResult r;
  r.n_expected = n_expected;
  r.n_engine = static_cast<int>(engine.size());
  r.n_reference = static_cast<int>(reference.size());
  if (n_expected <= 0) {
    r.message = "no tokens requested (n_steps " + std::to_string(n_expected) + ")";
    return r;
  }
  if (r.n_engine == 0 || r.n_reference == 0) {
    r.message = std::string("empty generation from the ") +
                (r.n_engine == 0 ? (r.n_reference == 0 ? "engine and the reference" : "engine") : "reference");
    return r;
  }
  if (r.n_engine != n_expected || r.n_reference != n_expected) {
    r.message = "unequal lengths: engine generated " + std::to_string(r.n_engine) + " tokens, reference " +
                std::to_string(r.n_reference) + ", expected " + std::to_string(n_expected);
    return r;
  }
  for (int i = 0; i < n_expected; ++i) {
    const StepRecord& e = engine[static_cast<std::size_t>(i)];
    const StepRecord& f = reference[static_cast<std::size_t>(i)];
    if (e.non_finite()) {
      r.first_divergence = i;
      r.engine_token = e.token;
      r.reference_token = f.token;
      r.engine_top = e.top;
      r.reference_top = f.top;
      r.message = "step " + std::to_string(i) + ": engine logits are not finite (NaN/inf)";
      return r;
    }
    if (e.token == f.token) continue;
    r.first_divergence = i;
    r.engine_token = e.token;
    r.reference_token = f.token;
    r.engine_top = e.top;
    r.reference_top = f.top;
    const bool e_in_f = in_top(f.top, e.token, k);
    const bool f_in_e = in_top(e.top, f.token, k);
    if (e_in_f && f_in_e) {
      r.pass = true;
      return r;
    }
    r.message = "step " + std::to_string(i) + ": tokens differ (engine " + std::to_string(e.token) +
                ", reference " + std::to_string(f.token) + ") and " +
                (!e_in_f ? "the engine token is not in the reference top-" + std::to_string(k)
                         : "the reference token is not in the engine top-" + std::to_string(k)) +
                "; engine top-" + std::to_string(k) + " " + verify_detail::format_top(e.top, k) +
                ", reference top-" + std::to_string(k) + " " + verify_detail::format_top(f.top, k);
    return r;
  }
  r.pass = true;
  return r;
}

}  // namespace llmport
