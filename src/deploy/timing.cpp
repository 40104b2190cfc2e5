#include "deploy/timing.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "deploy/prompts.hpp"
#include "deploy/util.hpp"
#include "llmport/error.hpp"

namespace llmport::deploy {

TimingStats TimingStats::of(std::vector<double> s) {
  TimingStats t;
  t.samples_ms = s;
  if (s.empty()) return t;
  std::sort(s.begin(), s.end());
  std::size_t n = s.size();
  t.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  t.min = s.front();
  t.max = s.back();
  return t;
}

nlohmann::json TimingStats::to_json() const {
  return {{"median_ms", median}, {"min_ms", min}, {"max_ms", max}, {"samples_ms", samples_ms}};
}

nlohmann::json TimingComparison::to_json() const {
  return {{"baseline", baseline.to_json()},
          {"tuned", tuned.to_json()},
          {"diff_ms", diff_ms},
          {"spread_ms", spread_ms},
          {"verdict", std::string(status_name(verdict))},
          {"reason", reason}};
}

TimingComparison compare_timings(const TimingStats& baseline, const TimingStats& tuned,
                                 bool same_configs, const std::string& what) {
  TimingComparison c;
  c.baseline = baseline;
  c.tuned = tuned;
  c.diff_ms = tuned.median - baseline.median;
  c.spread_ms = std::max(baseline.range(), tuned.range());
  std::string nums = fmt::format("{} median {:.4g} ms tuned vs {:.4g} ms before (difference {:+.3g} ms, spread {:.3g} ms, {} runs each)",
                                 what, tuned.median, baseline.median, c.diff_ms, c.spread_ms,
                                 tuned.samples_ms.size());
  if (same_configs) {
    c.verdict = PhaseStatus::PassWithWarnings;
    c.reason = "the sweep's best configs are the ones already in use; " + nums;
  } else if (c.diff_ms < 0 && -c.diff_ms > c.spread_ms) {
    c.verdict = PhaseStatus::Pass;
    c.reason = nums;
  } else if (c.diff_ms > c.spread_ms) {
    c.verdict = PhaseStatus::Fail;
    c.reason = "tuned configs are measurably slower: " + nums;
  } else {
    c.verdict = PhaseStatus::PassWithWarnings;
    c.reason = "difference inside the runs' spread: " + nums;
  }
  return c;
}

namespace {
double run_once(Engine& e, TimedOp op, const std::vector<int>& ids, int n_tokens) {
  if (op == TimedOp::Prefill) {
    Stopwatch sw;
    e.prefill(ids);
    return sw.seconds() * 1e3;
  }
  e.prefill(std::span<const int>(ids.data(), 1));
  Stopwatch sw;
  for (int i = 0; i < n_tokens; ++i) e.decode_step(ids[static_cast<std::size_t>(i + 1)]);
  return sw.seconds() * 1e3 / n_tokens;
}
}  // namespace

std::pair<TimingStats, TimingStats> time_interleaved(const ModelConfig& cfg, const WeightStore& w,
                                                     const EngineOptions& baseline,
                                                     const EngineOptions& tuned, TimedOp op,
                                                     int n_tokens, int reps, double* build_s,
                                                     double budget_ms) {
  if (n_tokens < 1 || reps < 1) throw UsageError("timing needs n_tokens >= 1 and reps >= 1");
  Stopwatch sw;
  EngineOptions a = baseline, b = tuned;
  int need = op == TimedOp::Prefill ? n_tokens : n_tokens + 1;
  a.max_seq = b.max_seq = need;
  Engine ea(cfg, w, a), eb(cfg, w, b);
  if (build_s) *build_s += sw.seconds();
  auto ids = timing_ids(need, cfg.vocab_size);  // [need]
  // Warm-up (caches, thread pool, page faults); its time sizes the repetitions: at least
  // `reps`, more (up to kMaxReps) while they fit a small time budget, so the median of a
  // tiny model's millisecond runs is not at the mercy of one descheduled run.
  double tw = std::max(run_once(ea, op, ids, n_tokens), run_once(eb, op, ids, n_tokens));
  if (op == TimedOp::Decode) tw *= n_tokens;  // run_once returns ms per token
  constexpr int kMaxReps = 51;
  if (tw > 0) reps = std::max(reps, std::min(kMaxReps, static_cast<int>(budget_ms / (2 * tw))));
  reps |= 1;  // odd: the median is one run
  std::vector<double> sa, sb;
  for (int r = 0; r < reps; ++r) {
    if (r % 2 == 0) {
      sa.push_back(run_once(ea, op, ids, n_tokens));
      sb.push_back(run_once(eb, op, ids, n_tokens));
    } else {
      sb.push_back(run_once(eb, op, ids, n_tokens));
      sa.push_back(run_once(ea, op, ids, n_tokens));
    }
  }
  return {TimingStats::of(sa), TimingStats::of(sb)};
}

}  // namespace llmport::deploy
