// The rounding-noise prediction of a quantized format's cost (quant_cost.hpp).
#include "verify/quant_cost.hpp"

#include <functional>

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

// The logits of llmport's reference without the quantization, in the base dtype the noise
// oracle shares, so the two differ by the format's rounding only. Kept, not run beside
// each draw: one fp32-sized copy of the weights lives at a time.
std::vector<std::vector<float>> plain_logits(const ModelConfig& cfg, const WeightStore& weights, int threads,
                                             DType base, const std::vector<TeacherSequence>& seqs) {
  EngineOptions opt;
  opt.backend = "reference";
  opt.dtype = base;
  opt.threads = threads;
  EngineRunner plain(cfg, weights, opt, "oracle", /*keep_logits=*/true);
  std::vector<std::vector<float>> out;
  teacher_force(plain, seqs, [&] { out.push_back(plain.last_logits()); });
  return out;
}
}  // namespace

QuantCost predict_quant_cost(const ModelConfig& cfg, const WeightStore& weights, const Engine& engine, int threads,
                             const std::vector<TeacherSequence>& seqs) {
  if (engine.quant() == QuantType::None)
    throw UsageError("the predicted quantization cost is for quantized engines (q8_0, q4_0) only");
  const auto plain = plain_logits(cfg, weights, threads, engine.dtype(), seqs);
  QuantCost c;
  double kl_sum = 0;
  int64_t agree = 0;
  for (int draw = 0; draw < kQuantCostDraws; ++draw) {
    auto noise = make_rounding_noise_runner(cfg, weights, threads, engine.dtype(), engine.quant(),
                                            engine.quant_lm_head(), engine.quant_acts(), draw);
    std::size_t k = 0;
    teacher_force(*noise, seqs, [&] {
      const std::vector<float>& p = plain[k++];
      kl_sum += kl_full(p, noise->last_logits());
      agree += argmax_lowest_id(p) == argmax_lowest_id(noise->last_logits()) ? 1 : 0;
      ++c.steps;
    });
  }
  if (c.steps > 0) {
    c.mean_kl = kl_sum / static_cast<double>(c.steps);
    c.top1_agreement = static_cast<double>(agree) / static_cast<double>(c.steps);
  }
  return c;
}

}  // namespace llmport
