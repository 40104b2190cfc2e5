#pragma once
// The depth check against a golden: every layer's output, the embedding and the final norm
// of the engine against the hidden states each golden sequence records (the last prompt
// position). verify runs it beside its logit gates, deploy in phases 2, 3 and 7: without it
// a golden whose deeper hidden states were damaged passed a verify (and a deployment) that
// claims the model matches all of the reference.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/records.hpp"
#include "llmport/runner.hpp"

namespace llmport::verify_detail {

/// What the golden's hidden states say about one side, over every sequence that has them.
struct GoldenLayers {
  int n_sequences = 0;  ///< sequences compared (those recording hidden states)
  /// Names of the golden's sequences that record no per-layer hidden states (unchecked at
  /// depth; said beside the result, not silently left out), every one where none records any.
  std::vector<std::string> unrecorded;
  /// "" or where the golden contradicts itself: "FILE: sequence S: hidden states: ..." (a
  /// record holding NaN/inf, or one the next record disagrees with while the side agrees
  /// with llmport's oracle there): bad input, not the engine's finding.
  std::string golden_damaged;
  /// "" or the first sequence where the side departs from the golden: "sequence S: layer K:
  /// <diagnosis rule>".
  std::string departs;
  nlohmann::json per_sequence = nlohmann::json::array();  ///< name, first_suspicious, record_inconsistency
  /// Whether a departure fails the check: false when the plain fp32 oracle stood in for a
  /// quantized engine (compare_target_golden_layers).
  bool gating = true;

  /// The manifest's / report's record of it.
  nlohmann::json to_json() const;
};

/// "" or "; N sequence(s) record no hidden states (held to the logits only): a, b" for
/// GoldenLayers::unrecorded, the words every report of the check uses; where no sequence
/// records any (`n_checked` 0), "; the golden records no hidden states (its N sequence(s)
/// held to the logits only)".
std::string unrecorded_phrase(const std::vector<std::string>& unrecorded, int n_checked);

/// Diagnoses `side` against every golden sequence recording hidden states (diagnosis.hpp
/// rules; the budget follows the two sides' dtypes). `oracle` (llmport's fp32 oracle with
/// the side's weights, not independent; may be `side` itself; asked for only where a
/// sequence is flagged) decides whose a contradicting record is (golden_record_damaged): it
/// can only blame the golden, never clear the side. Throws UsageError naming file and
/// sequence for hidden states that do not fit the model.
/// `own_contradiction` (optional; every sequence, `first_flag` "" where none departs): "" or "<record>: why" the
/// golden contradicts itself at an end of the chain, where no record of its own vouches:
/// its embedding is not the embedding table's row of its prompt's last id, or its final
/// norm is not what gives its own logits. Such a record is the golden's damage.
GoldenLayers compare_golden_layers(
    const std::shared_ptr<const RecordFile>& golden, Runner& side, const std::function<Runner&()>& oracle,
    const std::function<std::string(const RecordSequence&, const std::string& first_flag, Runner& side)>&
        own_contradiction = {});

/// A deployment's check (phase 3 with the default kernel configs, phase 7's re-run with the
/// tuned ones) and verify's: `engine` against the golden, the plain fp32 oracle of
/// `cfg`/`weights` deciding whose a contradicting record is. A `quantized` engine differs
/// from the unquantized golden by its quantization (KLD's to judge), so the oracle stands
/// in for it: its contradictions of the golden still count, its departures do not (gating
/// false). A bf16/fp16 engine that agrees within its own budget has the oracle held at
/// fp32's beside it, the same way (its departure not gating).
/// `plain_oracle`: that oracle when the caller holds one already (an unquantized target's
/// phase oracle is it), else one is built (an fp32 copy of the weights): for a quantized
/// engine always, for another only where a sequence is flagged.
GoldenLayers compare_target_golden_layers(const std::shared_ptr<const RecordFile>& golden, EngineRunner& engine,
                                          bool quantized, const ModelConfig& cfg, const WeightStore& weights,
                                          int threads, Runner* plain_oracle = nullptr);

}  // namespace llmport::verify_detail
