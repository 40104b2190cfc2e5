#pragma once
// What rounding to a quantized format costs a model, predicted without llmport's quantizer:
// the KLD gate's bounds are derived from it (verify_run.cpp).
#include <cstdint>
#include <vector>

#include "llmport/engine.hpp"
#include "llmport/model_config.hpp"
#include "llmport/weights.hpp"

namespace llmport {

/// One teacher-forced sequence: the prompt ids, then the reference's tokens fed one by one
/// (the first step is the prompt's own distribution, so steps = 1 + teacher tokens used).
struct TeacherSequence {
  std::vector<int> prompt_ids;
  std::vector<int> tokens;  ///< reference tokens; all but the last are fed
};

/// The predicted cost of `engine`'s quantization on this model: llmport's reference
/// computation in the engine's base dtype, plain against the rounding-noise oracle
/// (make_rounding_noise_runner: the same projections with random errors of the format's
/// step, q8 activations where the engine's are), teacher-forced along `seqs`, averaged over
/// kQuantCostDraws realizations of the noise.
/// Both sides are llmport's own forward, so a fault of that forward appears on both and
/// cancels: the prediction measures the format's rounding, not the model's correctness.
struct QuantCost {
  double mean_kl = 0;         ///< mean full-vocabulary KL(plain || noise) per step, nats
  double top1_agreement = 1;  ///< share of steps whose argmax agrees, 0..1
  int64_t steps = 0;          ///< steps x draws
};
/// Throws UsageError when the engine is not quantized; what the runners throw.
QuantCost predict_quant_cost(const ModelConfig& cfg, const WeightStore& weights, const Engine& engine, int threads,
                             const std::vector<TeacherSequence>& seqs);

}  // namespace llmport
