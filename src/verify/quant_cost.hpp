#pragma once
// What rounding to a quantized format costs a model, predicted without llmport's quantizer:
// the KLD gate's bounds are derived from it (verify_run.cpp).
#include <cstdint>
#include <vector>

#include "llmport/engine.hpp"
#include "llmport/model_config.hpp"
#include "llmport/verify.hpp"
#include "llmport/weights.hpp"

namespace llmport {

/// One sequence: the prompt ids and the tokens fed after it one by one (all but the last;
/// the first step is the prompt's own distribution, so steps = tokens.size()).
struct TeacherSequence {
  std::vector<int> prompt_ids;
  std::vector<int> tokens;
  /// Steps the gate compares over the whole vocabulary whatever the kind (the reference
  /// holds full logits there: TeacherForcedStep::full_vocabulary); empty = none.
  std::vector<bool> full_vocabulary = {};
};

/// The predicted cost of `engine`'s quantization on this model, on the prompts of `seqs`
/// for as many steps as each has tokens, from two models of its rounding, each against the
/// same computation with nothing rounded (make_rounding_noise_runner "off": fp32
/// projections, the engine's base dtype elsewhere), teacher-forced along that computation's
/// own greedy tokens (not the reference's: damaged ones would widen the bounds), per step
/// the KL the gate measures (`kind`: full, or coarsened to the plain side's top-5):
/// independent errors of the format's step (the noise, averaged over kQuantCostDraws
/// realizations), and llmport's quantizer itself. The prediction is the smaller cost (and
/// the lower top-1 agreement, the top-1 gate being the weaker one): a quantizer bug cannot
/// raise the noise's, and on a model that its real rounding costs less than random errors
/// of the same size (a synthetic 0.6B qwen3 in q4_0: 0.0018 against 0.10) the quantizer's
/// keeps the bound from widening.
/// Both sides are llmport's own forward, so a fault of that forward appears on both and
/// cancels: the prediction measures the format's rounding, not the model's correctness.
struct QuantCost {
  double mean_kl = 0;         ///< min(noise_mean_kl, quantizer_mean_kl), nats per step
  double top1_agreement = 1;  ///< min(noise_top1, quantizer_top1), 0..1
  double noise_mean_kl = 0, noise_top1 = 1;
  double quantizer_mean_kl = 0, quantizer_top1 = 1;
  int64_t steps = 0;          ///< teacher-forced steps of one side
};
/// Throws UsageError when the engine is not quantized; what the runners throw.
QuantCost predict_quant_cost(const ModelConfig& cfg, const WeightStore& weights, const Engine& engine, int threads,
                             const std::vector<TeacherSequence>& seqs, KlKind kind);

}  // namespace llmport
