#pragma once
// Phase 4/5 timing: interleaved runs of two engine configurations (the previous phase's
// kernel configs vs the tuned ones) and the comparison rule of the deploy issue.
#include <cstdint>
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

/// A confidence interval for tuned/baseline, the ratio of median times.
struct RatioInterval {
  double ratio = 0;          ///< median(tuned) / median(baseline) of the samples
  double low = 0, high = 0;  ///< the interval's ends
  double confidence = 0.95;
  int resamples = 0;
  /// "paired percentile bootstrap of the ratio of medians (N resamples of the interleaved
  /// pairs, seed S)".
  std::string method;
};

/// Paired percentile bootstrap (Efron & Tibshirani, An Introduction to the Bootstrap, ch.
/// 13): resamples the interleaved (baseline[i], tuned[i]) pairs with replacement, so the
/// machine's drift between pairs stays paired, and takes the 2.5th and 97.5th percentiles
/// of median(tuned*)/median(baseline*). Deterministic (fixed seed). Both sample vectors
/// must have the same size >= 1, else UsageError.
RatioInterval ratio_of_medians_interval(const std::vector<double>& baseline_ms,
                                        const std::vector<double>& tuned_ms, double confidence = 0.95,
                                        int resamples = 2000, uint64_t seed = 20241201);

/// Outcome of tuned-vs-baseline.
struct TimingComparison {
  TimingStats baseline, tuned;
  RatioInterval interval;
  /// Whether the tuned configs are adopted: only when the whole interval lies below 1
  /// (measurably faster). Otherwise the previous configs stay: tuning never makes a
  /// deployment slower.
  bool adopted = false;
  bool same_configs = false;  ///< the sweep's best configs are the ones already in use
  std::string reason;         ///< one line: the decision and the numbers
  nlohmann::json to_json() const;
};

/// The rule (docs/deployment.md): same configs -> nothing to adopt; 95% interval of the
/// ratio of medians entirely below 1 -> adopt the tuned configs; otherwise keep the
/// previous ones. `what` names the quantity ("prefill", "decode per token"); `same_why`, where
/// not empty, says why the configs are the same instead of "the sweep's best configs are
/// the ones already in use (nothing to adopt)" (a deployment with nothing to sweep).
TimingComparison compare_timings(const TimingStats& baseline, const TimingStats& tuned,
                                 bool same_configs, const std::string& what, const std::string& same_why = "");

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
