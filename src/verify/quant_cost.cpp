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
// Teacher-forces `r` along `seqs` (prompt, then each token but the last), calling
// `at_step(sequence, step)` after the prompt (step 0) and after each fed token.
void teacher_force(EngineRunner& r, const std::vector<TeacherSequence>& seqs,
                   const std::function<void(const TeacherSequence&, std::size_t)>& at_step) {
  for (const TeacherSequence& s : seqs) {
    if (s.tokens.empty()) continue;
    r.prefill(s.prompt_ids);
    at_step(s, 0);
    int pos = static_cast<int>(s.prompt_ids.size());
    for (std::size_t k = 0; k + 1 < s.tokens.size(); ++k) {
      r.decode_step(s.tokens[k], pos++);
      at_step(s, k + 1);
    }
  }
}

// The rounding-noise oracle's computation with nothing rounded (the same fp32 projections,
// the same base dtype elsewhere), run greedy from each prompt for as many steps as the
// reference has: each step's record (logits kept) and, in `own`, the sequences of its own
// tokens the other sides are teacher-forced along. Its own tokens, not the reference's: a
// reference whose tokens were damaged would lead every side off the model's path, where
// rounding costs more, and so widen the bounds it is judged by. Kept, not run beside each
// side: one fp32-sized copy of the weights lives at a time.
std::vector<StepRecord> plain_steps(const ModelConfig& cfg, const WeightStore& weights, int threads,
                                    const Engine& engine, const std::vector<TeacherSequence>& seqs,
                                    std::vector<TeacherSequence>& own) {
  auto plain = make_rounding_noise_runner(cfg, weights, threads, engine.dtype(), engine.quant(), engine.quant_lm_head(),
                                          engine.quant_acts(), "off");
  std::vector<StepRecord> out;
  for (const TeacherSequence& s : seqs) {
    if (s.tokens.empty()) continue;
    TeacherSequence mine{s.prompt_ids, {}, s.full_vocabulary};
    for (StepRecord& st : generate_greedy(*plain, s.prompt_ids, static_cast<int>(s.tokens.size()))) {
      mine.tokens.push_back(st.token);
      out.push_back(std::move(st));  // with its logits: the runner keeps them
    }
    own.push_back(std::move(mine));
  }
  return out;
}

// Mean KL(plain || side) per step (as the gate measures it: `kind`, full at a sequence's
// full_vocabulary steps) and top-1 agreement over every step of the `roundings` sides.
std::pair<double, double> cost_of(const ModelConfig& cfg, const WeightStore& weights, int threads, const Engine& engine,
                                  const std::vector<TeacherSequence>& seqs, const std::vector<StepRecord>& plain,
                                  KlKind kind, const std::vector<std::string>& roundings) {
  double kl_sum = 0;
  int64_t agree = 0, steps = 0;
  for (const std::string& rounding : roundings) {
    auto side = make_rounding_noise_runner(cfg, weights, threads, engine.dtype(), engine.quant(),
                                           engine.quant_lm_head(), engine.quant_acts(), rounding);
    std::size_t k = 0;
    teacher_force(*side, seqs, [&](const TeacherSequence& s, std::size_t step) {
      const StepRecord& p = plain[k++];
      const bool full = kind == KlKind::Full || (step < s.full_vocabulary.size() && s.full_vocabulary[step]);
      kl_sum += full ? kl_full(p.logits, side->last_logits()) : kl_coarsened(p, side->last_logits());
      agree += p.token == argmax_lowest_id(side->last_logits()) ? 1 : 0;
      ++steps;
    });
  }
  if (steps == 0) return {0.0, 1.0};
  return {kl_sum / static_cast<double>(steps), static_cast<double>(agree) / static_cast<double>(steps)};
}
}  // namespace

QuantCost predict_quant_cost(const ModelConfig& cfg, const WeightStore& weights, const Engine& engine, int threads,
                             const std::vector<TeacherSequence>& seqs, KlKind kind) {
  if (engine.quant() == QuantType::None)
    throw UsageError("the predicted quantization cost is for quantized engines (q8_0, q4_0) only");
  std::vector<TeacherSequence> own;
  const auto plain = plain_steps(cfg, weights, threads, engine, seqs, own);
  std::vector<std::string> draws;
  for (int d = 0; d < kQuantCostDraws; ++d) draws.push_back(std::to_string(d));
  QuantCost c;
  std::tie(c.noise_mean_kl, c.noise_top1) = cost_of(cfg, weights, threads, engine, own, plain, kind, draws);
  std::tie(c.quantizer_mean_kl, c.quantizer_top1) = cost_of(cfg, weights, threads, engine, own, plain, kind, {"quantizer"});
  // NaN (a side that overflowed) leaves the other.
  c.mean_kl = std::fmin(c.noise_mean_kl, c.quantizer_mean_kl);
  // The lower top-1: a few repeated prompts can keep the noise's argmax everywhere while
  // the quantizer's (and the engine's) move (llama3-tiny q4_0, one prompt x4: 100% vs 33%).
  c.top1_agreement = std::fmin(c.noise_top1, c.quantizer_top1);
  c.steps = static_cast<int64_t>(plain.size());
  return c;
}

}  // namespace llmport
