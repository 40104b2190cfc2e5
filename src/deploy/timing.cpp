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
          {"ratio_of_medians", interval.ratio},
          {"interval", {{"low", interval.low}, {"high", interval.high}, {"confidence", interval.confidence}}},
          {"method", interval.method},
          {"same_configs", same_configs},
          {"adopted", adopted},
          {"reason", reason}};
}

namespace {
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
// splitmix64: a tiny deterministic generator (the interval must be reproducible).
uint64_t next_u64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

RatioInterval ratio_of_medians_interval(const std::vector<double>& base, const std::vector<double>& tuned,
                                        double confidence, int resamples, uint64_t seed) {
  if (base.empty() || base.size() != tuned.size())
    throw UsageError("ratio interval: needs paired samples of equal size (got " + std::to_string(base.size()) +
                     " and " + std::to_string(tuned.size()) + ")");
  if (resamples < 1 || !(confidence > 0 && confidence < 1)) throw UsageError("ratio interval: bad resampling setup");
  RatioInterval r;
  r.confidence = confidence;
  r.resamples = resamples;
  r.ratio = median_of(tuned) / median_of(base);
  const std::size_t n = base.size();
  std::vector<double> ratios(static_cast<std::size_t>(resamples)), b(n), t(n);
  for (auto& ratio : ratios) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t j = static_cast<std::size_t>(next_u64(seed) % n);
      b[i] = base[j];
      t[i] = tuned[j];
    }
    ratio = median_of(t) / median_of(b);
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1.0 - confidence) / 2.0;
  auto at = [&](double q) {
    const double i = std::clamp(q * (resamples - 1) + 0.5, 0.0, resamples - 1.0);
    return ratios[static_cast<std::size_t>(i)];
  };
  r.low = at(tail);
  r.high = at(1.0 - tail);
  r.method = fmt::format("paired percentile bootstrap of the ratio of medians ({} resamples of the {} interleaved pairs)",
                         resamples, n);
  return r;
}

TimingComparison compare_timings(const TimingStats& baseline, const TimingStats& tuned, bool same_configs,
                                 const std::string& what, const std::string& same_why) {
  TimingComparison c;
  c.baseline = baseline;
  c.tuned = tuned;
  c.same_configs = same_configs;
  c.interval = ratio_of_medians_interval(baseline.samples_ms, tuned.samples_ms);
  const std::string nums =
      fmt::format("{} median {:.4g} ms tuned vs {:.4g} ms before: ratio {:.3f}, {:.0f}% interval [{:.3f}, {:.3f}] ({})",
                  what, tuned.median, baseline.median, c.interval.ratio, 100 * c.interval.confidence, c.interval.low,
                  c.interval.high, c.interval.method);
  if (same_configs) {
    c.reason = (same_why.empty() ? "the sweep's best configs are the ones already in use (nothing to adopt)" : same_why) +
               "; " + nums;
  } else if (c.interval.high < 1.0) {
    c.adopted = true;
    c.reason = "tuned configs adopted: measurably faster; " + nums;
  } else {
    c.reason = "previous configs kept: the tuned ones are not measurably faster (the interval does not lie below 1); " +
               nums;
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
