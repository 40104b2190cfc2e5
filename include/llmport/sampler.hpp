#pragma once
// Token sampling from logits, with HF `generate` semantics and order: repetition penalty
// (RepetitionPenaltyLogitsProcessor), then temperature, top-k, top-p, min-p warpers
// (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper).
// The random stream is llmport's own (splitmix64-seeded xoshiro256**), so a seed gives the
// same tokens on every platform and standard library.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace llmport {

/// Sampling parameters. temperature <= 0 means greedy (argmax, ties to the smaller id); a
/// positive temperature T samples softmax((logit - max) / T) computed in double, so any
/// finite T works (T -> 0 tends to greedy, T -> inf to uniform over the kept tokens).
struct SamplingParams {
  double temperature = 0.0;         ///< <= 0: greedy
  int top_k = 0;                    ///< 0: off
  double top_p = 1.0;               ///< 1: off; keep the smallest set with mass >= top_p
  double min_p = 0.0;               ///< 0: off; drop tokens with p < min_p * p_max
  double repetition_penalty = 1.0;  ///< 1: off; CTRL paper: logit / r if > 0 else logit * r
  uint64_t seed = 0;
  /// Throws UsageError naming the parameter when out of range (temperature finite and
  /// >= 0, top_p in (0, 1], min_p in [0, 1], repetition_penalty > 0, top_k >= 0).
  void validate() const;
};

/// Index of the largest value; ties go to the smaller index, NaN ranks below every number
/// (same order as top_k_logits). logits: [vocab].
int argmax(std::span<const float> logits);

/// The k largest (id, value) pairs, descending, ties to the smaller id. logits: [vocab].
std::vector<std::pair<int, float>> top_k_logits(std::span<const float> logits, int k);

/// A seeded sampler. Not thread-safe.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& p);
  /// Picks the next token from `logits` [vocab] (fp32). `history` (prompt + generated ids)
  /// feeds the repetition penalty (each distinct id penalized once).
  int sample(std::span<const float> logits, std::span<const int> history = {});
  const SamplingParams& params() const { return p_; }

 private:
  double uniform();  // [0, 1)
  SamplingParams p_;
  uint64_t s_[4];
  std::vector<float> work_;            // [vocab] penalized logits
  std::vector<std::pair<float, int>> cand_;  // candidates (prob or logit, id)
};

}  // namespace llmport
