// The rounding-noise prediction of a quantized format's cost (quant_cost.hpp).
#include "verify/quant_cost.hpp"

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <utility>

#include "llmport/error.hpp"
#include "llmport/records.hpp"
#include "llmport/runner.hpp"
#include "llmport/verify.hpp"

namespace llmport {

namespace {
// Calls `at_step` after the prompt and after each fed reference token, teacher-forcing `r`.
void teacher_force(EngineRunner& r, const std::vector<TeacherSequence>& seqs, const std::function<void()>& at_step) {
  for (const TeacherSequence& s : seqs) {
    if (s.tokens.empty()) continue;
    r.prefill(s.prompt_ids);
    at_step();
    int pos = static_cast<int>(s.prompt_ids.size());
    for (std::size_t k = 0; k + 1 < s.tokens.size(); ++k) {
      r.decode_step(s.tokens[k], pos++);
      at_step();
    }
  }
}

// The logits of the rounding-noise oracle's computation with nothing rounded (the same fp32
// projections, the same base dtype elsewhere), so each side it is compared with differs by
// its rounding only. Kept, not run beside each side: one fp32-sized copy of the weights
// lives at a time.
std::vector<std::vector<float>> plain_logits(const ModelConfig& cfg, const WeightStore& weights, int threads,
                                             const Engine& engine, const std::vector<TeacherSequence>& seqs) {
  auto plain = make_rounding_noise_runner(cfg, weights, threads, engine.dtype(), engine.quant(), engine.quant_lm_head(),
                                          engine.quant_acts(), "off");
  std::vector<std::vector<float>> out;
  teacher_force(*plain, seqs, [&] { out.push_back(plain->last_logits()); });
  return out;
}

// Mean KL(plain || side) and top-1 agreement over every step of the `roundings` sides.
std::pair<double, double> cost_of(const ModelConfig& cfg, const WeightStore& weights, int threads, const Engine& engine,
                                  const std::vector<TeacherSequence>& seqs,
                                  const std::vector<std::vector<float>>& plain,
                                  const std::vector<std::string>& roundings) {
  double kl_sum = 0;
  int64_t agree = 0, steps = 0;
  for (const std::string& rounding : roundings) {
    auto side = make_rounding_noise_runner(cfg, weights, threads, engine.dtype(), engine.quant(),
                                           engine.quant_lm_head(), engine.quant_acts(), rounding);
    std::size_t k = 0;
    teacher_force(*side, seqs, [&] {
      const std::vector<float>& p = plain[k++];
      kl_sum += kl_full(p, side->last_logits());
      agree += argmax_lowest_id(p) == argmax_lowest_id(side->last_logits()) ? 1 : 0;
      ++steps;
    });
  }
  if (steps == 0) return {0.0, 1.0};
  return {kl_sum / static_cast<double>(steps), static_cast<double>(agree) / static_cast<double>(steps)};
}
}  // namespace

QuantCost predict_quant_cost(const ModelConfig& cfg, const WeightStore& weights, const Engine& engine, int threads,
                             const std::vector<TeacherSequence>& seqs) {
  if (engine.quant() == QuantType::None)
    throw UsageError("the predicted quantization cost is for quantized engines (q8_0, q4_0) only");
  const auto plain = plain_logits(cfg, weights, threads, engine, seqs);
  std::vector<std::string> draws;
  for (int d = 0; d < kQuantCostDraws; ++d) draws.push_back(std::to_string(d));
  QuantCost c;
  std::tie(c.noise_mean_kl, c.noise_top1) = cost_of(cfg, weights, threads, engine, seqs, plain, draws);
  std::tie(c.quantizer_mean_kl, c.quantizer_top1) = cost_of(cfg, weights, threads, engine, seqs, plain, {"quantizer"});
  // NaN (a side that overflowed) leaves the other.
  c.mean_kl = std::fmin(c.noise_mean_kl, c.quantizer_mean_kl);
  c.top1_agreement = std::fmax(c.noise_top1, c.quantizer_top1);
  c.steps = static_cast<int64_t>(plain.size());
  return c;
}

}  // namespace llmport
