// The engine runner (production path) and the oracle (reference backend, fp32).
#include <string_view>

#include "llmport/error.hpp"
#include "llmport/runner.hpp"

namespace llmport {

EngineRunner::EngineRunner(const ModelConfig& cfg, const WeightStore& weights, const EngineOptions& opt,
                           std::string kind, bool keep_logits)
    : engine_(std::make_unique<Engine>(cfg, weights, opt)), kind_(std::move(kind)), keep_logits_(keep_logits) {}

EngineRunner::~EngineRunner() = default;

RunnerInfo EngineRunner::info() const {
  RunnerInfo i;
  i.kind = kind_;
  Engine& e = *engine_;
  i.backend = e.backend().name();
  i.isa = e.backend().isa();
  i.dtype = precision_name(e.dtype(), e.quant());
  if (e.quant_lm_head() != QuantType::None) i.lm_head = std::string(quant_name(e.quant_lm_head()));
  i.independent = false;  // llmport's own code, whatever the backend
  i.source = kind_ != "oracle"                 ? "llmport engine"
             : e.quant() == QuantType::None ? "llmport reference kernels (fp32)"
                                            : "llmport reference kernels (fp32, " + i.dtype + " weights dequantized)";
  return i;
}

PrefillRecord EngineRunner::prefill(std::span<const int> prompt_ids, bool want_hidden) {
  if (prompt_ids.empty()) throw UsageError("prefill: empty prompt (at least one token id is needed)");
  PrefillRecord rec;
  const int n = static_cast<int>(prompt_ids.size());
  const int dim = engine_->config().emb_dim;
  HiddenStates& h = rec.hidden;
  if (want_hidden) {
    h.emb_dim = dim;
    h.layer_out.assign(static_cast<std::size_t>(engine_->config().n_layers), {});
    engine_->set_probe([&h, dim](std::string_view name, int layer, const float* data, int n_tokens, int d) {
      if (d != dim) return;
      const std::size_t count = static_cast<std::size_t>(n_tokens) * static_cast<std::size_t>(d);
      if (name == "embedding") {
        h.embedding.assign(data, data + count);
      } else if (name == "layer_out" && layer >= 0 && layer < static_cast<int>(h.layer_out.size())) {
        h.layer_out[static_cast<std::size_t>(layer)].assign(data, data + count);
      } else if (name == "final_norm") {
        h.final_norm.assign(data, data + count);
      }
    });
  }
  try {
    last_logits_ = engine_->prefill(prompt_ids);
  } catch (...) {
    if (want_hidden) engine_->set_probe(nullptr);
    throw;
  }
  if (want_hidden) {
    engine_->set_probe(nullptr);
    for (int p = 0; p < n; ++p) h.positions.push_back(p);
  }
  rec.last = StepRecord::from_logits(last_logits_, keep_logits_);
  return rec;
}

StepRecord EngineRunner::decode_step(int token, int pos) {
  if (pos != engine_->pos())
    throw UsageError("decode_step: position " + std::to_string(pos) + " is not the KV-cache length " +
                     std::to_string(engine_->pos()));
  last_logits_ = engine_->decode_step(token);
  return StepRecord::from_logits(last_logits_, keep_logits_);
}

std::unique_ptr<EngineRunner> make_oracle_runner(const ModelConfig& cfg, const WeightStore& weights, int threads,
                                                 QuantType quant, QuantType quant_lm_head,
                                                 const std::map<std::string, ActQuant>& acts) {
  EngineOptions opt;
  opt.quant_act_of_tensor = acts;
  opt.quant_act = ActQuant::F32;  // a linear `acts` does not name multiplies fp32 x
  opt.backend = "reference";
  opt.dtype = DType::F32;
  opt.threads = threads;
  opt.quant = quant;
  opt.quant_lm_head = quant_lm_head;
  return std::make_unique<EngineRunner>(cfg, weights, opt, "oracle", /*keep_logits=*/true);
}

std::unique_ptr<EngineRunner> make_rounding_noise_runner(const ModelConfig& cfg, const WeightStore& weights,
                                                         int threads, DType base, QuantType quant,
                                                         QuantType quant_lm_head,
                                                         const std::map<std::string, ActQuant>& acts,
                                                         const std::string& rounding) {
  if (quant == QuantType::None) throw UsageError("the rounding-noise oracle is for quantized dtypes (q8_0, q4_0) only");
  EngineOptions opt;
  opt.quant_act_of_tensor = acts;
  opt.quant_act = ActQuant::F32;
  opt.backend = "cpu";
  opt.backend_level = "rounding-noise/" + rounding;  // make_backend_at refuses another
  opt.dtype = base;  // the unquantized tensors round as the engine's do
  opt.threads = threads;
  opt.quant = quant;
  opt.quant_lm_head = quant_lm_head;
  return std::make_unique<EngineRunner>(cfg, weights, opt, "rounding-noise oracle", /*keep_logits=*/true);
}

std::vector<StepRecord> generate_greedy(Runner& r, std::span<const int> prompt_ids, int n_steps) {
  std::vector<StepRecord> steps;
  if (n_steps <= 0) return steps;
  steps.push_back(r.prefill(prompt_ids).last);
  int pos = static_cast<int>(prompt_ids.size());
  for (int i = 1; i < n_steps; ++i) {
    steps.push_back(r.decode_step(steps.back().token, pos));
    ++pos;
  }
  return steps;
}

}  // namespace llmport
