#pragma once
// Diagnosis: where along the depth two sides of a prefill part ways. Per layer, the
// per-position cosine of the block output (residual stream after layer il) and error
// magnitudes; the last row compares the final normed hidden. Also the phase-2
// single-block gate (layer 0 only).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/records.hpp"
#include "llmport/runner.hpp"
#include "llmport/verify.hpp"

namespace llmport {

/// Flag thresholds (not a gate): per-position min cosine under kFlagMinCosine, or a median
/// drop of more than kFlagMedianDrop from the previous row (layer 0 compares with 1.0;
/// final_norm, flagged by the same rules, with the last layer),
/// or the median cosine of the layer's own update (block output minus block input) under
/// kFlagUpdateMedianCosine (docs/verification.md gives the measurements).
inline constexpr double kFlagMinCosine = 0.85;
inline constexpr double kFlagMedianDrop = 0.05;
inline constexpr double kFlagUpdateMedianCosine = 0.999;

/// One row of the diagnosis table.
struct DiagnosisRow {
  std::string name;  ///< "layer 0" .. "layer L-1", "final_norm"
  int layer = -1;    ///< il, or -1 for final_norm
  CosineStats stats;   ///< the block output (residual stream after layer il)
  /// The layer's own contribution, layer_out[il] - layer_out[il-1] (embedding for il 0):
  /// layer-local, so a fault in one layer stands out even where the residual stream,
  /// dominated by earlier layers, barely moves. has_update false when not computable.
  CosineStats update;
  bool has_update = false;
  bool flagged = false;
  std::string reason;  ///< why flagged ("" otherwise)
};

/// Diagnosis of one prompt.
struct DiagnosisResult {
  std::string model;
  std::optional<std::string> prompt;
  std::vector<int> prompt_ids;
  RunnerInfo engine, reference;
  int n_positions = 0;  ///< positions compared per layer (1 with a golden reference)
  std::vector<DiagnosisRow> rows;  ///< n_layers rows, then final_norm
  int first_suspicious_layer = -1;  ///< -1 when no layer is flagged (final_norm alone may be)
  std::string first_suspicious;     ///< name of the first flagged row ("layer 3", "final_norm"), "" if none
  /// Where a recorded hidden state contradicts the next one ("" = nowhere): the reference's
  /// record (embedding, a layer's output, final_norm) holding NaN/inf, or both sides' records
  /// differing (a rule flags it, or the next row's update) while the next record of the
  /// residual stream agrees again (mean |e - r| 10x smaller; from the last layer to
  /// final_norm, a difference the cosine rules see, in relative error): a computation's error carries on to the next
  /// record, a damaged record (a golden's, or a side's capture) does not. That row, and the
  /// next row's update (which reads it), are not flagged against the engine; the CLI asks
  /// the oracle which side it is.
  std::string record_inconsistency;
  /// The layer whose record it names: -1 the embedding, n_layers final_norm, -2 none.
  int inconsistent_layer = -2;
  /// The record it names holds NaN/inf on the reference's side (the reference's defect
  /// whatever the engine computes).
  bool reference_non_finite = false;
  int engine_top1 = -1, reference_top1 = -1;  ///< at the last prompt position
  std::string planted_fault;  ///< test-only fault planted in the engine ("" = none)
  /// Why the planted fault cannot show in this comparison ("" = it can): diagnosis compares
  /// prefill hidden states, so a fault of decode steps or of the logits alone is invisible.
  std::string blind_spot;

  nlohmann::json to_json() const;
  /// Markdown table (one row per layer + final_norm) with the flag summary.
  std::string to_markdown() const;
  /// Standalone SVG line plot of min/median/mean cosine per layer.
  std::string to_svg() const;
};

/// What a diagnosis cannot see of `fault` (DiagnosisResult::blind_spot): kv_off_by_one acts
/// on decode steps only and logit_scale on the logits only; "" for every other kind.
std::string diagnosis_blind_spot(const FaultInjection& fault);

/// Compares two prefills' hidden states (engine vs reference). Rows are matched by
/// position (a golden has only the last position). Throws UsageError when the two
/// records share no position or have different layer counts / emb_dim.
/// `kl_bound`: the run's KL bound (kl_bound_for), which sets the scale rule's budget
/// single_block_rel_threshold(kl_bound): 0.141 (bf16/fp16/quantized), 0.0040 (fp32 vs fp32).
DiagnosisResult diagnose(const PrefillRecord& engine, const PrefillRecord& reference,
                         double kl_bound = kKlBoundBf16);

/// Whether the record inconsistency of `vs_golden` (an engine against a golden) is the
/// golden's: its record holds NaN/inf, or `vs_oracle` (the same engine against llmport's
/// oracle on the same prompt) finds no inconsistency and flags no row up to the record after
/// it, so the golden is the odd one out. False when `vs_golden` has none.
bool golden_record_damaged(const DiagnosisResult& vs_golden, const DiagnosisResult& vs_oracle);

/// Prefills both runners on `prompt_ids` with hidden states and diagnoses.
/// The scale rule's budget follows the two sides' precisions (RunnerInfo::dtype: fp32 on
/// both, or a reference that states none, holds it to fp32's).
DiagnosisResult run_diagnosis(Runner& engine, Runner& reference, const std::vector<int>& prompt_ids);

/// Per-position min cosine threshold of the single-block gate by head_dim:
/// 0.99 (head_dim <= 64), 0.98 (<= 128), 0.97 (> 128).
double single_block_position_threshold(int head_dim);

/// Whole-tensor cosine the single-block gate requires of layer 0 (and of the embedding).
inline constexpr double kSingleBlockCosine = 0.99;
/// Largest whole-tensor relative error ||engine - reference|| / ||reference|| the gate
/// admits for a run whose logits are held to KL bound `kl_bound` (kl_bound_for: the bf16
/// bound unless both sides compute in fp32): sqrt(2 (1 - kSingleBlockCosine)) = 0.141, the
/// error a vector of the reference's length at that cosine has, times
/// sqrt(kl_bound / kKlBoundBf16) (KL grows with the square of a relative error): 0.141 for
/// bf16/fp16, 0.0040 for fp32 against an fp32 reference. Cosine alone is blind to scale (a
/// reference x1000 has cosine 1); this bounds the magnitude. Measured layer-0 errors on the
/// shared models: fp32 3.0e-7 to 4.0e-7, bf16 0.0024 to 0.0044.
double single_block_rel_threshold(double kl_bound = kKlBoundBf16);

/// Outcome of the phase-2 single-block gate.
struct SingleBlockResult {
  bool pass = false;
  double whole_cosine = 0;       ///< flattened layer-0 output, >= kSingleBlockCosine required
  double whole_rel = 0;          ///< ||e - r|| / ||r|| of the flattened layer 0, <= single_block_rel_threshold(kl_bound)
  double min_position_cosine = 0;  ///< >= single_block_position_threshold(head_dim)
  double position_threshold = 0;
  /// The embedding rows when both sides recorded them (-1 when not compared): the same
  /// whole-tensor cosine and relative-error bounds.
  double embedding_cosine = -1, embedding_rel = -1;
  bool has_nan = false;
  int n_positions = 0;
  std::string message;  ///< reason on FAIL, summary on PASS
  nlohmann::json to_json() const;
};

/// The single-block gate on two prefills' layer-0 outputs (engine vs reference): no NaN,
/// whole cosine >= kSingleBlockCosine, whole relative error <= single_block_rel_threshold(kl_bound),
/// per-position min cosine by head_dim; and the embedding rows under the same whole-tensor
/// bounds when both sides have them. Throws UsageError when either lacks layer 0 or they
/// share no position.
SingleBlockResult single_block_gate(const HiddenStates& engine, const HiddenStates& reference,
                                    int head_dim, double kl_bound = kKlBoundBf16);
/// Prefills both runners on prompt_ids and applies the single-block gate.
SingleBlockResult run_single_block_gate(Runner& engine, Runner& reference,
                                        const std::vector<int>& prompt_ids, int head_dim,
                                        double kl_bound = kKlBoundBf16);

}  // namespace llmport
