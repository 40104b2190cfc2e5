#pragma once
// Phase 4/5 timing: interleaved runs of two engine configurations (the previous phase's
// kernel configs vs the tuned ones) and the comparison rule of the deploy issue.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/deploy.hpp"
#include "llmport/engine.hpp"

namespace llmport::deploy {

/// Samples of one configuration (ms per run: prefill ms, or decode ms per token).
struct TimingStats {
  std::vector<double> samples_ms;
  double median = 0, min = 0, max = 0;
  double range() const { return max - min; }
  static TimingStats of(std::vector<double> samples_ms);
  nlohmann::json to_json() const;
};

/// Outcome of tuned-vs-baseline.
struct TimingComparison {
  TimingStats baseline, tuned;
  double diff_ms = 0;  ///< tuned.median - baseline.median (negative: tuned is faster)
  double spread_ms = 0;  ///< max(baseline.range(), tuned.range())
  PhaseStatus verdict = PhaseStatus::NotRun;
  std::string reason;
  nlohmann::json to_json() const;
};

/// The rule: tuned configs identical to the baseline's -> PASS-with-warnings; tuned median
/// lower by more than the spread -> PASS; |difference| within the spread ->
/// PASS-with-warnings; tuned median higher by more than the spread (measurably slower) ->
/// FAIL. `what` names the quantity ("prefill", "decode per token").
TimingComparison compare_timings(const TimingStats& baseline, const TimingStats& tuned,
                                 bool same_configs, const std::string& what);

/// What to time.
enum class TimedOp {
  Prefill,  ///< one prefill of n_tokens tokens (ms)
  Decode,   ///< n_tokens decode steps after a 1-token prefill (ms per token)
};

/// Builds one engine per option set and times `op` at least `reps` times each (more, up to
/// 51, when runs are short enough to fit `budget_ms`; always odd), interleaved
/// (A B B A ...) after one warm-up run each, so machine noise hits both alike.
/// Returns {baseline, tuned}. `build_s` receives the engines' construction time (packing).
std::pair<TimingStats, TimingStats> time_interleaved(const ModelConfig& cfg, const WeightStore& w,
                                                     const EngineOptions& baseline,
                                                     const EngineOptions& tuned, TimedOp op,
                                                     int n_tokens, int reps, double* build_s,
                                                     double budget_ms = 2000);

}  // namespace llmport::deploy
