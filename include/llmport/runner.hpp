#pragma once
// Runners: the one interface verification drives (prefill -> record, decode_step ->
// record), implemented by the engine (production path), the oracle (llmport's fp32
// reference kernels: not independent) and a golden file (records produced elsewhere).
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "llmport/engine.hpp"
#include "llmport/records.hpp"

namespace llmport {

/// What a runner is, for reports and the phase-7 audit.
struct RunnerInfo {
  std::string kind;         ///< "engine" | "oracle" | "golden"
  std::string backend;      ///< backend name ("cpu", "reference"), "" for golden
  std::string isa;          ///< backend ISA, "" for golden
  /// Precision: the weight dtype ("bf16", "fp32", ...), "q8_0"/"q4_0" for quantized
  /// projections (precision_name), or the file's compute dtype.
  std::string dtype;
  /// lm_head's block format ("q8_0"/"q4_0") when an engine quantizes it, else "".
  std::string lm_head;
  bool independent = false;  ///< true only for references produced outside llmport
  std::string source;       ///< golden file path or producer description
};

/// A model side that verify and diagnosis compare. Each runner keeps its own KV cache.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual RunnerInfo info() const = 0;
  /// Empties the KV cache and runs `prompt_ids` [n_tokens] at positions 0..n-1. Returns
  /// the distribution at the last position and, when want_hidden, the per-layer block
  /// outputs [n_tokens, emb_dim] (a golden has the last position only) and final norm.
  /// Throws UsageError for an empty prompt or one longer than the context.
  virtual PrefillRecord prefill(std::span<const int> prompt_ids, bool want_hidden = false) = 0;
  /// Feeds `token` at position `pos` (= current cache length) and returns the
  /// distribution at that position. Throws UsageError when pos is not the cache length.
  virtual StepRecord decode_step(int token, int pos) = 0;
};

/// Runs llmport's Engine. kind "engine": the deployment's backend/dtype/kernel configs;
/// kind "oracle": reference backend, fp32 (see make_oracle_runner).
class EngineRunner : public Runner {
 public:
  /// `cfg` and `weights` must outlive the runner. keep_logits: StepRecords carry the full
  /// logits [vocab] (the oracle keeps them for the full KL; the engine does not need to).
  EngineRunner(const ModelConfig& cfg, const WeightStore& weights, const EngineOptions& opt,
               std::string kind = "engine", bool keep_logits = false);
  ~EngineRunner() override;
  RunnerInfo info() const override;
  PrefillRecord prefill(std::span<const int> prompt_ids, bool want_hidden = false) override;
  StepRecord decode_step(int token, int pos) override;
  /// Full logits of the last call are always available here ([vocab]).
  const std::vector<float>& last_logits() const { return last_logits_; }
  Engine& engine() { return *engine_; }

 private:
  std::unique_ptr<Engine> engine_;
  std::string kind_;
  bool keep_logits_;
  std::vector<float> last_logits_;  // [vocab]
};

/// llmport's fp32 reference kernels ("reference" backend, dtype fp32, no fault): allowed
/// as a reference, but every report marks it as not independent. With `quant` the oracle
/// holds the same block-quantized projections the engine does, dequantized exactly
/// (llmport/quant.hpp): it then checks the quantized kernels, not the quantization. With
/// `acts` (Engine::quant_acts() of the engine under test) each quantized linear also rounds
/// its input through the same q8 activation blocks where that engine's does, so the two
/// differ by fp32 summation order only.
std::unique_ptr<EngineRunner> make_oracle_runner(const ModelConfig& cfg, const WeightStore& weights,
                                                 int threads = 0, QuantType quant = QuantType::None,
                                                 QuantType quant_lm_head = QuantType::None,
                                                 const std::map<std::string, ActQuant>& acts = {});

/// The rounding-noise oracle: the cpu backend at level "rounding-noise/<rounding>" in the
/// engine's base dtype `base` (so its unquantized tensors round as the engine's do), whose
/// `quant` projections (and lm_head with `quant_lm_head`) are fp32 linears holding the
/// weights as `rounding` leaves them, and whose linears named in `acts` with Q8 round their
/// input the same way (src/kernels/rounding_noise.hpp): "0", "1", ...: a random error of
/// the format's step per value, that realization of the noise; "quantizer": llmport's
/// quantizer's rounding; "off": untouched (the plain side of a prediction). Against "off"
/// it predicts the format's cost on this model (VerifyResult::predicted_mean_kl).
/// Deterministic for the same model, prompts, steps, threads and `rounding`. Throws
/// UsageError for QuantType::None or another `rounding`.
std::unique_ptr<EngineRunner> make_rounding_noise_runner(const ModelConfig& cfg, const WeightStore& weights,
                                                         int threads, DType base, QuantType quant,
                                                         QuantType quant_lm_head = QuantType::None,
                                                         const std::map<std::string, ActQuant>& acts = {},
                                                         const std::string& rounding = "0");

/// Replays one RecordSequence of a record file. prefill must be given the sequence's
/// prompt ids and decode_step the sequence's own tokens in order (teacher forcing the
/// reference along its own trajectory); anything else throws UsageError naming the step.
class GoldenRunner : public Runner {
 public:
  GoldenRunner(std::shared_ptr<const RecordFile> file, int sequence_index);
  RunnerInfo info() const override;
  PrefillRecord prefill(std::span<const int> prompt_ids, bool want_hidden = false) override;
  StepRecord decode_step(int token, int pos) override;

 private:
  std::shared_ptr<const RecordFile> file_;
  const RecordSequence* seq_;
  int next_step_ = -1;  // index of the step the next decode_step returns
};

/// Free-running greedy generation of n_steps tokens (1 from prefill + n_steps-1 decode
/// steps), EOS ignored. steps[i].token is generated token i.
std::vector<StepRecord> generate_greedy(Runner& r, std::span<const int> prompt_ids, int n_steps);

}  // namespace llmport
