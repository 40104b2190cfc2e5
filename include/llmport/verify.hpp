#pragma once
// The correctness gate: the engine against a reference that is not llmport itself.
// Two checks per prompt, both required:
//  - free-running token sets (vLLM tests/models/utils.py `check_logprobs_close`): each side
//    decodes greedily; at the first step where the tokens differ, each side's token must be
//    in the other's top-5; a side that produced fewer tokens than asked, or none, FAILS;
//  - teacher-forced: the engine is fed the reference's tokens; at every step the top-1s
//    must be in the other side's top-5, and the mean KL(reference || engine) per step over
//    the whole run must be under kKlBound (docs/verification.md gives the measurements).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/dtype.hpp"
#include "llmport/engine.hpp"
#include "llmport/quant.hpp"
#include "llmport/records.hpp"

namespace llmport {

/// Bound on the mean KL divergence per step (nats), teacher-forced, over a whole run, for
/// a bf16/fp16 engine or reference. Measured (docs/verification.md): bf16 engines on
/// stories260K and the synthetic models stay far under it; a uniform 1.25x logit scale
/// exceeds it on every golden.
inline constexpr double kKlBoundBf16 = 2.5e-3;
/// The same bound when both sides compute in fp32. Measured (docs/verification.md): honest
/// fp32 runs reach <= 3e-7 (llama3-tiny), while wrong_rope_theta@2=1.1 gives ~1.6e-5 and
/// logit_scale=1.05 ~1.6e-3 on stories260K; 2e-6 separates them with a 6x margin each way.
inline constexpr double kKlBoundFp32 = 2e-6;
/// Kept for callers that mean "the bf16 bound".
inline constexpr double kKlBound = kKlBoundBf16;
/// The KL bound of a run: kKlBoundFp32 when the engine computes in fp32 and the reference
/// does not state a lower precision (bf16/bfloat16/fp16/float16), else kKlBoundBf16.
double kl_bound_for(DType engine_dtype, const std::string& reference_dtype);

/// The gate of a weight-quantized engine (q8_0/q4_0), against the unquantized reference,
/// teacher-forced over the prompt set: mean KL(reference || engine) per step <= max_mean_kl
/// and the share of steps whose top-1 agrees >= min_top1. The token-set checks (free
/// running and teacher-forced top-5) are reported but do not decide: 4-bit weights change
/// near-tie choices by design. Defaults (issue #15, docs/verification.md "Quantized
/// engines"): the numpy reference measured mean KLD 2.0e-4 / top-1 99.5% (q8_0) and
/// 0.071-0.073 / 84-86% (q4_0) on stories260K, a 64-wide model; 1B-class models sit lower.
struct KldGate {
  double max_mean_kl = 0;  ///< nats per step
  double min_top1 = 0;     ///< share of steps, 0..1
};
/// The default gate of `quant`: q8_0 {2e-3, 0.97}, q4_0 {0.15, 0.78}. Throws UsageError
/// for QuantType::None (an unquantized engine uses the token-set gates and kl_bound_for).
KldGate kld_gate_defaults(QuantType quant);

/// How far the KLD gate widens for a model more sensitive to the rounding than the one its
/// defaults were set on (VerifyResult::predicted_mean_kl, predicted_top1): the honest engine
/// may cost kQuantCostKlFactor times the predicted mean KL and kQuantCostTop1Factor times
/// the predicted top-1 disagreement. Measured (docs/verification.md "Quantized engines"):
/// over the five shared models in q8_0 and q4_0, against their goldens and the oracle, the
/// engine's mean KL is 0.77-1.32x the prediction and its top-1 disagreement up to 2.35x
/// (q4_0 llama3-tiny against its golden: 42.7% of steps against a predicted 18.2%).
/// With 2x, stories260K keeps the dtype's KL bounds.
inline constexpr double kQuantCostKlFactor = 2.0;
inline constexpr double kQuantCostTop1Factor = 3.0;
/// Realizations of the noise the prediction averages (one draw over a 4 x 24-step golden
/// ranged 0.44-1.03 around q4_0 llama3-tiny's mean 0.75).
inline constexpr int kQuantCostDraws = 2;
/// The least top-1 agreement a derived gate allows, whatever the prediction: below it the
/// top-1 check could not fail (1 - 3 x a disagreement above 25% is below 25%).
inline constexpr double kMinTop1Floor = 0.25;
/// The KLD gate of a model whose format's predicted cost is `predicted_mean_kl` nats a step
/// and `predicted_top1` top-1 agreement: max_mean_kl = max(d.max_mean_kl, kQuantCostKlFactor
/// * predicted_mean_kl); min_top1 = min(d.min_top1, max(kMinTop1Floor, 1 -
/// kQuantCostTop1Factor * (1 - predicted_top1))). The bounds only widen: a model less
/// sensitive than stories260K keeps the dtype's. A NaN prediction leaves `d` as it is.
KldGate derived_kld_gate(const KldGate& d, double predicted_mean_kl, double predicted_top1);

/// Bound on the kernel check of a quantized engine (VerifyResult::kernel_mean_kl) whose
/// twin computes its unquantized tensors in `base`: kl_bound_for(base, ""), the dtype's own
/// KL bound. verify's twin uses fp32 (so 2e-6): it multiplies fp32 activations and keeps
/// its unquantized tensors in fp32, so it and the oracle compute the same products and
/// differ only by summation order.
double kernel_kl_bound_for(DType base);

/// Steps generated per prompt without a golden (1 from prefill + 31 decode steps).
inline constexpr int kDefaultSteps = 32;
/// Prompts of a built-in set: oracle and hf references run all of them by default.
inline constexpr int kDefaultPrompts = 8;
/// Prompts `verify --quick` runs from a built-in set (the verdict is then capped).
inline constexpr int kQuickPrompts = 2;
/// Depth a plain PASS needs from any reference: at least this many prompts x steps (and
/// every sequence and step the reference holds). The shared synthetic goldens hold 4 x 24.
inline constexpr int kMinPrompts = 4;
inline constexpr int kMinSteps = 24;
/// Share of one reference sequence's compared logits equal bit for bit to one of
/// llmport's own computations (the engine under test, the oracle, or the cpu engine in
/// fp32, bf16 or fp16) from which the reference counts as produced by llmport whatever its
/// provenance says. Honest independent references measure <= 0.2 per sequence
/// (docs/verification.md): a copy of llmport output measures 1.0.
inline constexpr double kSelfMatchShare = 0.5;

/// Who produced a reference, read from the file itself.
struct ReferenceProvenance {
  std::string producer;      ///< the producer the file names ("" when it names none)
  bool independent = false;  ///< the provenance allows an independent verdict
  std::string finding;       ///< why not ("" when independent)
};

/// Provenance rules (docs/verification.md): a file that names llmport as its producer,
/// states `"independent": false`, or names no producer (nothing, or a placeholder such as
/// "unknown" or "n/a") is not independent.
ReferenceProvenance assess_provenance(const RecordFile& rf);

/// Whether a producer statement names llmport, read as letters and digits only with case,
/// separators, zero-width characters and look-alike letters folded (0/1, NFKC forms, and
/// every character Unicode's confusables data, UTS #39 via ICU, draws like a Latin letter):
/// "LLM-P0rt", "llrnport" and "llmp\u043ert" do.
bool names_llmport(const std::string& producer);

/// Whether a free text (a note, a description, any metadata string) names llmport as a word:
/// folded as names_llmport, but split into words at every separator, so "an LLM; portable
/// reference" and "llm-portal" do not, "made by llmport 0.1" and "\u029F\u029F\u1D0D\u1D18\u1D0F\u0280\u1D1B's" do.
bool mentions_llmport(const std::string& text);

/// How much of one reference sequence equals one llmport computation bit for bit.
struct SelfMatch {
  std::string against;     ///< "engine", "oracle", "cpu fp32 engine", ...
  std::string sequence;    ///< the reference sequence's name
  int64_t compared = 0;    ///< reference top-k logits compared
  int64_t identical = 0;   ///< of those, equal as fp32 bit patterns
  int64_t shifted = 0;     ///< of the others, in steps that are `logits` plus one constant
  double share() const { return compared ? static_cast<double>(identical + shifted) / compared : 0.0; }
  /// The compared entries, step after step, as the reference holds them (`reference`) and as
  /// this computation computed them (`own`); step_end[i] is one past step i's last entry.
  /// Read by the copy-direction check (copy_directions); kept only for `fp32` computations.
  std::vector<float> reference{}, own{};
  std::vector<int> step_end{};
  bool fp32 = false;  ///< an unquantized fp32 computation: the copy-direction check applies
};

/// The copy-direction check of one llmport fp32 computation C against a reference along one
/// sequence (or all of them: sequence "all"). At the compared entries, each step centred on
/// its median (softmax ignores a constant), d = reference - C and f = F - C, F being the
/// same forward with fp64 sums and intermediates at fp32 op boundaries (the reference
/// backend's level "fp64"). beta is the least-squares slope of d on f over the entries not
/// far (kCopyDirectionFar), se its standard error. An independent fp32 reference
/// R = T + e_R (T exact) against C = T + e_C gives d = e_R - e_C and f = e_F - e_C, so
/// beta = var(e_C) / (var(e_C) + var(e_F)), about 0.5 (both fp32 roundings alike; measured
/// 0.42-0.60 on the shared goldens); a copy of C moved in its last bits (d = noise, an ulp,
/// a scale of 1 + a few ulps, a 7-digit print) has beta = 0. A mean of m of llmport's fp32
/// computations has beta ~ (1 - 1/m) / 2: from m = 2 it is not told from an independent
/// reference (docs/verification.md, Limits).
struct CopyDirection {
  std::string against;   ///< the llmport computation C (a SelfMatch::against)
  std::string sequence;  ///< the reference sequence, or "all"
  int64_t n = 0;         ///< entries fitted, less one per step (the centring)
  int64_t far = 0;       ///< entries not fitted: |d| > kCopyDirectionFar x max(rms(f), |f|)
  double beta = 0.0, se = 0.0;
  double rms_d = 0.0, rms_f = 0.0;  ///< root mean square of d and f (logits)
  /// How many of llmport's computations C averages: 1, or 2 for the mean of a pair ("mean
  /// of A and B"): the float32 mean of two runs is the cheapest forgery the single rows
  /// cannot call (its slope against each is ~0.25 +- 0.02); against the pair's own mean it
  /// is 0. A mean's rows only ever deny independence (copied()).
  int computations = 1;
  /// beta + kCopyDirectionSigmas x se < kCopyDirectionBeta, over >= kCopyDirectionMinEntries
  /// with at most kCopyDirectionFarShare of the entries far: C's output moved in its last bits.
  bool copied() const;
  /// beta - kCopyDirectionShownSigmas x se > kCopyDirectionShownBeta over the same
  /// entries and far share: the reference's error points where C's rounding points, as an
  /// independent computation's does. Neither copied() nor this: the content cannot tell
  /// (values printed or moved far coarser than C's rounding), which caps the verdict.
  bool independent() const;
  /// >= kCopyDirectionMinEntries fitted, at most kCopyDirectionFarShare far, a finite
  /// slope and error: the rows either decision needs.
  bool decidable() const;
};

/// A reference whose beta against some fp32 computation stays below this with
/// kCopyDirectionSigmas standard errors to spare is that computation's output perturbed:
/// halfway between a copy (0) and an independent fp32 reference (~0.5). Copies measured
/// beta + 4 se <= 0.25 per sequence (4-ulp random walks); honest >= 0.53.
inline constexpr double kCopyDirectionBeta = 0.25;
inline constexpr double kCopyDirectionSigmas = 4.0;
/// Independence shown (CopyDirection::independent): half the copy threshold, 2 se to
/// spare. The shared goldens measure 0.41-0.61 with se 0.03-0.05 (beta - 2 se >= 0.32);
/// a 6-digit print of llmport's own output has se ~0.4 and 10-80% of its entries far.
inline constexpr double kCopyDirectionShownBeta = 0.125;
inline constexpr double kCopyDirectionShownSigmas = 2.0;
/// Fewer entries than this never decide (the slope is too loose to call).
inline constexpr int64_t kCopyDirectionMinEntries = 40;
/// An entry is far when |d| > this x max(rms(f), |f|): not fitted (a few large moves must not
/// hide a copy behind a large error). An honest fp32 reference has |d| ~ rms(f): 4x is a
/// 3-sigma event even where its own error is twice llmport's.
inline constexpr double kCopyDirectionFar = 4.0;
/// More far entries than this share never decide: the fit over the near ones would select
/// entries by d (an honest reference of a lower precision is near llmport only where its
/// error happens to be small, which makes d look unrelated to f).
inline constexpr double kCopyDirectionFarShare = 0.1;

/// The check of every fp32 computation in `rows` against the reference, per sequence and
/// over all (rows of one against name), each against the row of `fp64` (SelfMatch::against
/// of the F computation) of the same sequence; then of the mean of every pair of them
/// (CopyDirection::computations = 2), whose per-sequence rows are kept only where
/// copied(). Rows without entries, without an F row or with f = 0 everywhere give nothing.
std::vector<CopyDirection> copy_directions(const std::vector<SelfMatch>& rows, const std::string& fp64);

/// The pooled row `all` without the sequence of `one` (same computation): the other
/// sequences' slope and error, from the sums both rows carry (n, beta, rms_d, rms_f). A
/// sequence judged against a pool it is part of drags the pool toward itself.
CopyDirection pooled_without(const CopyDirection& all, const CopyDirection& one);

/// Of the single computations' rows pooled over all sequences ("all"), or with `pooled`
/// false of their per-sequence rows, the one with the least beta + kCopyDirectionSigmas x se
/// (the closest to a copy); null when there is none.
const CopyDirection* least_copy_direction(const std::vector<CopyDirection>& rows, bool pooled = true);

/// The against name of the fp64 computation's SelfMatch rows.
inline constexpr const char* kFp64Side = "fp64 oracle";

/// Of two computations' values of the same entries, those that count as llmport's own.
struct SelfMatchCount {
  int64_t identical = 0;  ///< equal as fp32 bit patterns
  int64_t shifted = 0;    ///< the others, when the whole span is llmport's plus one constant
};
/// Compares `reference` [n] with `llmport` [n] (the same entries, e.g. one step's top-k
/// logits or one row of log-probs): bit-identical entries, and, when n >= 3 and every
/// entry equals llmport's plus one constant c rounded once to float (reference ==
/// float(llmport + c)) with |c| above 8 half-ulps of the reference, the rest as shifted.
SelfMatchCount count_self_matching(std::span<const float> reference, std::span<const float> llmport);

/// Counts the first k top entries of a reference step (the logits the gates read) that
/// equal `logits` [vocab] exactly; adds to m. A step whose (at least 3) entries all equal
/// `logits` plus one constant c, rounded once to float (reference == float(logits + c)),
/// with |c| beyond that rounding, counts its entries as `shifted`: softmax, so every KL
/// gate, cannot see such a shift, and an independent reference is not off by one constant.
/// Returns true when the step compares 3 entries or more and every one counted (identical
/// or shifted): the step is a whole copy of `logits`' computation.
bool count_self_match(const StepRecord& reference, std::span<const float> logits, SelfMatch& m, int k = kTopK);

// ---------------------------------------------------------------- comparators

/// Outcome of the free-running token-set check of one prompt.
struct FreeRunResult {
  bool pass = false;
  int n_expected = 0;
  int n_engine = 0;
  int n_reference = 0;
  int first_divergence = -1;  ///< first step where the tokens differ, -1 if none
  int engine_token = -1;      ///< at first_divergence
  int reference_token = -1;
  std::vector<TopEntry> engine_top;     ///< top-5 at first_divergence (or the failing step)
  std::vector<TopEntry> reference_top;
  std::string message;  ///< why it failed ("" on PASS)
};

/// The free-running check. `engine`/`reference`: each side's greedy steps
/// (steps[i].token = token i, steps[i].top = its top-k). n_expected > 0 tokens must come
/// from both sides; otherwise (unequal lengths, empty generation) FAIL. At the first
/// differing step the engine token must be in the reference top-k and vice versa.
FreeRunResult check_free_running(std::span<const StepRecord> engine,
                                 std::span<const StepRecord> reference, int n_expected,
                                 int k = kTopK);

/// Which KL a teacher-forced step used.
enum class KlKind {
  Full,       ///< sum over the vocabulary of p (log p - log q)
  Coarsened,  ///< reference top-5 ids + one "rest" bucket (needs logsumexp)
};

/// kl_full at reference logits moved toward the engine's by up to `half_unit` each (the
/// half unit of the digits the reference printed them with): each reference logit at
/// clamp(engine + c, l - half_unit, l + half_unit), c the reference-weighted mean of
/// reference - engine (logits are shift-free). Every value tried is one the digits allow,
/// so the result is the printed KL or less, never more than the digits can excuse; equal
/// to kl_full for half_unit 0. Shapes and throws as kl_full. A golden whose full logits are
/// printed to 4 digits moves an honest fp32 engine's full KL by ~h^2/6 ~ 4e-6 alone.
double kl_full_within_print(std::span<const float> reference_logits, std::span<const float> engine_logits,
                            double half_unit);

/// KL(P || Q) over the whole vocabulary, P = softmax(reference), Q = softmax(engine),
/// fp64. Both spans [vocab].
double kl_full(std::span<const float> reference_logits, std::span<const float> engine_logits);
/// KL of the distributions coarsened to the reference's top-k ids plus one "rest" bucket:
/// sum_{i in top-k} p_i (log p_i - log q_i) + (1 - P5) log((1 - P5) / (1 - Q5)), with
/// p_i = exp(logit_i - reference.logsumexp), P5 = sum p_i, Q5 = engine mass on the same
/// ids. Never negative up to rounding (a coarsening of a KL). Throws UsageError when the
/// reference lacks logsumexp. engine_logits: [vocab].
double kl_coarsened(const StepRecord& reference, std::span<const float> engine_logits,
                    int k = kTopK);
/// kl_coarsened at the reference's most favourable values within its printed digits: each
/// top logit moved toward the engine's by up to its own half unit (top_half_unit(i)) and the
/// logsumexp searched over +-reference.lse_half_unit (golden-section; = kl_coarsened when
/// both are 0). A golden printed with "%.6g" moves its rest mass 1 - P5 by up to ~1e-4 x
/// P5, which alone costs more than the fp32 bound on a step whose rest is ~1e-5. The KL
/// gate fails a run on this value (rounding cannot excuse a larger one); a pass that needs
/// it is capped (VerifyResult::mean_kl_within_print). Throws as kl_coarsened.
double kl_coarsened_within_print(const StepRecord& reference, std::span<const float> engine_logits,
                                 int k = kTopK);

/// Where a step's coarsened KL comes from, at the reference's values as printed: two top-5
/// lists printed to 4 digits read the same at a KL of 1e-4; these do not.
struct KlBreakdown {
  double max_log_prob_diff = -1.0;  ///< max |log p_i - log q_i| over the reference's top-k ids, nats
  int worst_id = -1;                ///< the id where it is
  double reference_rest = 0.0;      ///< 1 - P5: the reference's mass outside its top-k
  double engine_rest = 0.0;         ///< 1 - Q5: the engine's mass outside the same ids
};
/// The breakdown of one step (reference logsumexp from its full logits where present,
/// else its logsumexp; engine_logits [vocab]). nullopt where the reference has neither or
/// no top entries, or a top id is outside engine_logits; never throws.
std::optional<KlBreakdown> kl_breakdown(const StepRecord& reference, std::span<const float> engine_logits,
                                        int k = kTopK);

/// One teacher-forced step.
struct TeacherForcedStep {
  int step = 0;
  int reference_token = -1;  ///< reference top-1 (= its greedy token)
  int engine_top1 = -1;
  bool top1_agree = false;
  bool engine_in_reference_top = false;  ///< engine top-1 in reference top-5
  bool reference_in_engine_top = false;  ///< reference top-1 in engine top-5
  double kl = 0.0;              ///< at the reference's values as printed
  double kl_within_print = 0.0; ///< kl_coarsened_within_print (full_vocabulary: kl_full_within_print); the gate's value
  /// The step's KL is kl_full: the kind is Full, or the reference step holds the full
  /// logits anyway (a Coarsened reference's first step, typically). The top-k and its rest
  /// bucket cannot see mass moved among the ids outside the top-k (a model whose unlisted
  /// embedding rows were swapped read the honest model's coarsened KL); these steps can.
  bool full_vocabulary = false;
  std::vector<TopEntry> engine_top;
  std::vector<TopEntry> reference_top;
  bool pass() const { return engine_in_reference_top && reference_in_engine_top; }
};

/// Compares one step: reference record vs the engine's full logits [vocab].
TeacherForcedStep compare_step(int step, const StepRecord& reference,
                               std::span<const float> engine_logits, KlKind kind,
                               int k = kTopK);

/// The KL kind a reference trajectory allows: Full when every step has full logits,
/// else Coarsened when every step has logsumexp; throws UsageError otherwise.
KlKind kl_kind_for(std::span<const StepRecord> reference);

// ---------------------------------------------------------------- cosine statistics

/// Statistics of a per-position comparison of two [n_rows, dim] fp32 arrays.
struct CosineStats {
  int n_rows = 0;
  double min = 0, p5 = 0, median = 0, mean = 0;  ///< per-position cosine
  double whole = 0;        ///< cosine of the flattened arrays
  double max_abs = 0;      ///< max |a - b| over elements
  double mean_abs = 0;     ///< mean |a - b|
  double max_rel = 0;      ///< max over positions of ||a - b|| / ||b||
  double mean_rel = 0;     ///< mean over positions of ||a - b|| / ||b||
  double whole_rel = 0;    ///< ||a - b|| / ||b|| of the flattened arrays (inf when b is 0 and a is not)
  /// max over positions of | ||a|| / ||b|| - 1 |: a scale error, which cosine cannot see
  /// (0 when both rows are zero, inf when only b is)
  double max_norm_dev = 0;
  bool has_nan = false;    ///< any NaN/inf in a (the engine side) or b
  std::vector<double> per_position;  ///< [n_rows] cosine per position
};

/// Cosine of two vectors, zero-norm safe: both zero -> 1, one zero -> 0; NaN propagates.
double cosine(const float* a, const float* b, std::size_t n);
/// Per-position comparison of a (engine) against b (reference), both [n_rows, dim].
/// Non-finite cosines count as -1 in the order statistics (and set has_nan).
CosineStats compare_rows(const float* a, const float* b, int n_rows, int dim);

// ---------------------------------------------------------------- the gate

/// The Python interpreter the hf and numpy references are asked to run under: $LLMPORT_PYTHON
/// when set, else "python3" (found on PATH; usable_reference_python may fall back to
/// kDebianPython). Every caller (verify, deploy's phases) reads it here.
std::string reference_python();

/// Debian's own interpreter (the one `apt install python3-numpy` serves).
inline constexpr const char* kDebianPython = "/usr/bin/python3";

/// The interpreter `verify --reference kind` ("hf" or "numpy") runs under: `python` when it
/// imports the reference's modules; else, when `python` is the default "python3" and
/// LLMPORT_PYTHON is unset, kDebianPython if it does (PATH's python3 may be a pyenv or venv
/// without numpy while Debian's has it). Throws UsageError when the script is missing or no
/// interpreter imports the modules, naming what to install and LLMPORT_PYTHON.
std::string usable_reference_python(const std::string& kind, const std::string& python = reference_python());

/// Checks that `verify --reference kind` can run here (usable_reference_python), so deploy
/// refuses before it writes anything, not in phase 3. Throws UsageError as that does.
void require_reference_program(const std::string& kind, const std::string& python = reference_python());

/// Options of one verify run.
struct VerifyOptions {
  EngineOptions engine;  ///< the engine runner's backend, dtype, threads (and test faults)
  /// "oracle" | "golden:FILE" | "hf" (runs tools/hf_reference.py; needs python3 + torch +
  /// transformers, else UsageError) | "numpy" (runs tools/numpy_reference.py on the prompt
  /// ids llmport encoded; needs python3 + numpy, else UsageError).
  std::string reference = "oracle";
  /// Only the first kQuickPrompts prompts of a built-in set (a smoke test: the verdict is
  /// capped at PASS-with-warnings, the depth is below the minimum). Ignored with a golden,
  /// whose every sequence and step always runs.
  bool quick = false;
  std::optional<std::filesystem::path> prompts_file;  ///< --prompts FILE
  /// Where the engine's tile configs came from ("heuristic-default" before tuning; the
  /// deploy pipeline passes e.g. "tuned:<registry file>").
  std::string kernel_configs = "heuristic-default";
  /// Context cap (`--max-seq`, load_model_config's max_seq); 0 = the config's own. Needed for
  /// a model with a sliding window (accepted when the cap is <= the window).
  int max_seq = 0;
  std::filesystem::path report_dir;  ///< empty: no files written
  int n_steps = kDefaultSteps;       ///< ignored with a golden (its own count)
  /// Top-k of the token-set gates (recorded in the report; the audit checks the default).
  int top_k = kTopK;
  /// Mean-KL bound; unset = kl_bound_for(engine dtype, reference dtype), or for a
  /// quantized engine kld_gate_defaults(quant).max_mean_kl.
  std::optional<double> kl_bound;
  /// Quantized engines only: the least share of teacher-forced steps whose top-1 agrees
  /// (0..1); unset = kld_gate_defaults(quant).min_top1. UsageError when set for an
  /// unquantized engine (its gate has no such bound).
  std::optional<double> min_top1;
  /// Progress lines (prompt set chosen, per-prompt verdicts); may be empty.
  std::function<void(const std::string&)> log;
  /// Python interpreter for the hf and numpy references.
  std::string python = reference_python();
  /// Also compare a golden's recorded hidden states (VerifyResult::golden_layer_sequences).
  /// deploy turns it off: its phases 2, 3 and 7 hold them, with their own BLOCKED rows.
  bool golden_layers = true;
};

/// Result of one prompt.
struct PromptVerdict {
  std::string name;
  std::optional<std::string> prompt;
  std::vector<int> prompt_ids;
  std::vector<int> engine_tokens;
  std::vector<int> reference_tokens;
  FreeRunResult free_running;
  std::vector<TeacherForcedStep> teacher_forced;
  double mean_kl = 0, max_kl = 0;
  double top1_agreement = 0;  ///< fraction of teacher-forced steps, 0..1
  bool teacher_forced_top5_ok = true;
  std::string tokenization;  ///< "" or a mismatch/skip note for golden text prompts
  bool tokenization_ok = true;
  /// The texts the reference printed (decode, pieces, round trip: verify/reference_text.hpp)
  /// against llmport's tokenizer: "" when the reference states none or there is no
  /// tokenizer.json, "matches the reference (N checks)", or the first difference.
  std::string reference_text;
  bool reference_text_ok = true;
};

/// Result of one verify run (also the content of report.json).
struct VerifyResult {
  bool pass = false;
  std::string model;       ///< model directory
  std::string model_name;  ///< directory name
  // engine runner
  std::string runner_kind = "engine";
  std::string backend, isa, dtype;
  std::string lm_head;  ///< lm_head's block format when quantized (RunnerInfo::lm_head), else ""
  std::string kernel_configs;
  /// True when any linear shape used a heuristic default tile config (no registry, or a
  /// shape the registry has not measured: engine.kernels->heuristic_used).
  bool heuristic_default_configs = true;
  /// With EngineOptions::kernels: {"registry": writable dir, "chosen": {"n=.. k=..": config},
  /// "heuristic_used": [...]}; null otherwise.
  nlohmann::json kernel_selection;
  std::map<std::string, uint64_t> dispatch_counters;  ///< Backend::counters() of the run
  // reference
  std::string reference_kind;  ///< "golden" | "oracle" | "hf" | "numpy"
  std::string reference_source;
  /// Independent by kind, provenance and content (assess_provenance, self_matches).
  bool reference_independent = false;
  std::string independence_finding;  ///< why not independent ("" when independent)
  /// A golden or hf reference not found a copy whose content does not show independence
  /// either (some fp32 computation's CopyDirection is neither copied() nor independent(),
  /// or none could be read): why, "" otherwise. Caps the verdict; reference_independent
  /// stays true (nothing says it is llmport's).
  std::string independence_unshown;
  /// Stop ids (config.json / generation_config.json eos_token_id) that are ordinary text
  /// tokens of tokenizer.json, not special ones, e.g. "426 ('.')": generation would end at
  /// ordinary text, and no reference checks where generation stops (goldens run a fixed
  /// number of steps). Read from tokenizer.json's added tokens, or without one from
  /// tokenizer_config.json's added_tokens_decoder. Caps the verdict; "" when none or the
  /// model has neither file.
  std::string ordinary_stop_ids;
  /// Tokenizer::config_disagreements() joined by "; ": tokenizer_config.json says what
  /// tokenizer.json does not, so transformers and llmport (the Rust library's reading)
  /// tokenize the model differently. Caps the verdict; "" when they agree.
  std::string tokenizer_files_disagree;
  /// What the model's files ask transformers to run that llmport does not, joined by "; ":
  /// unrun_model_settings (custom code named by auto_map, generation constraints) and the
  /// weight loader's warnings (a tied model storing a different lm_head.weight). Caps the
  /// verdict; "" when none.
  std::string model_files_not_run;
  /// The first prompt whose printed text (PromptVerdict::reference_text) llmport's tokenizer
  /// does not reproduce, with the difference; "" when every one matched or none was stated.
  /// Caps the verdict.
  std::string reference_text_differs;
  std::string reference_producer;    ///< the producer the reference names
  std::string reference_dtype;
  /// hf and numpy only: {"program", "sha256", "shipped", "python", "kind", "script",
  /// "versions": {python, torch, transformers} or {python, numpy}}.
  nlohmann::json reference_program;
  int reference_sequences = 0;  ///< sequences the reference holds (golden/hf)
  int reference_steps = 0;      ///< steps per sequence the reference holds (golden/hf)
  int reference_top_entries = 0;  ///< fewest top entries of any reference step (golden/hf)
  /// Bit-identity of the reference with llmport's own computations (golden/hf only).
  std::vector<SelfMatch> self_matches;
  /// Per reference sequence, over steps instead of logits: `compared` = its steps,
  /// `identical` = the steps whose compared top-k all equal one computation's (bit for
  /// bit, or shifted by one constant), whichever computation each step's is. A golden
  /// whose steps come from several of llmport's computations, none reaching
  /// kSelfMatchShare of the logits alone, is not independent either.
  std::vector<SelfMatch> self_match_steps;
  /// The copy-direction check of every fp32 computation (copy_directions), per sequence and
  /// over all; one `copied()` denies independence.
  std::vector<CopyDirection> copy_directions;
  std::string fault;  ///< test-only fault planted in the engine ("" = none)
  // prompt set
  std::string prompt_set;        ///< "golden", "base", "instruct" or "file"
  std::string prompt_rendering;  ///< "raw", "chat_template", "ids", or a fallback note
  bool full = false;  ///< every prompt of the set ran (not --quick)
  int n_prompts = 0;
  int n_steps = 0;
  int64_t engine_tokens_generated = 0;  ///< free-running tokens, all prompts
  int64_t teacher_forced_steps = 0;
  int64_t engine_forward_calls = 0;     ///< prefill + decode calls on the engine runner
  // tolerances (the run's parameters) and summary
  int top_k = kTopK;
  double kl_bound = kKlBoundBf16;
  /// Which gate decided: "token-sets" (free-running + teacher-forced top-k, mean KL) or
  /// "kld" (a quantized engine: mean KL <= kl_bound and top-1 share >= min_top1 decide;
  /// the token-set results are reported only).
  std::string gate = "token-sets";
  double min_top1 = 0;      ///< "kld" gate only: the bound on top1_agreement
  /// The dtype's own bounds (kl_bound_for / kld_gate_defaults): a run whose bounds are
  /// looser (--kl-bound above, --min-top1 below) is capped at PASS-with-warnings, since
  /// such a PASS proves less than the dtype's gate; tighter bounds are not capped.
  double default_kl_bound = 0;
  double default_min_top1 = 0;
  /// "kld" gate only: the format's own bounds (kld_gate_defaults), before derived_kld_gate
  /// widened them for this model. A pass that needs the widening (mean KL above
  /// format_kl_bound, or top-1 below format_min_top1) is capped: it proves the engine as
  /// close as the format gets on this model, not the format's usual fidelity (a model
  /// built so that its blocks quantize badly widened its own q8_0 bound 1000x and passed
  /// at 1.5 nats a step).
  double format_kl_bound = 0;
  double format_min_top1 = 0;
  bool top1_pass = true;    ///< "kld" gate only: top1_agreement >= min_top1
  /// "kld" gate only, the kernel check: llmport's fp32 oracle holding the engine's own
  /// quantized weights, dequantized exactly (make_oracle_runner with the engine's quant),
  /// against a twin of the engine that differs only in multiplying fp32 activations and
  /// computing its unquantized tensors in fp32 (EngineOptions::quant_act F32, dtype F32; the
  /// fault, if one is planted, planted too), both
  /// teacher-forced along the reference's tokens; per step the full-vocabulary
  /// KL(oracle || twin), nats. The KLD gate judges the quantization against the
  /// independent reference, but the q4_0 quantization's own KLD hides a wrong kernel (a x1.5
  /// block scale in one layer moved stories260K's 0.054 to 0.058). The twin, not the engine
  /// with q8 activation blocks, because one activation that rounds to the other q8 value
  /// (from a last-bit difference upstream) grows through the later layers: honest deep
  /// models exceeded any bound that way. The q8-activation kernels are held to the
  /// reference op by op (phase 1, CpuQuantLinear tests). The oracle is not independent:
  /// this check can fail a run, never raise one.
  double kernel_mean_kl = 0, kernel_max_kl = 0;
  /// The reference check, run for an engine that does not compute in fp32 (bf16, fp16, a
  /// quantized dtype) against an outside reference (golden, numpy, hf; not the oracle):
  /// llmport's fp32 computation of the same model (the cpu backend, default tiles),
  /// teacher-forced along the reference's tokens; mean KL(reference || it) per step, held
  /// to the bound the reference's own precision supports (kl_bound_for(F32,
  /// reference_dtype): 2e-6 for an fp32 reference). The engine's gate is wider (bf16 2.5e-3;
  /// q4_0 on the synthetic models 0.4-1.6 nats) and cannot see a reference damaged below
  /// it: top-1 and top-2 swapped at the last step of 3 of stories260K's 8 sequences passed
  /// bf16 (mean KL 1.4e-3), a golden re-tempered 1.2x passed q4_0; this check fails both.
  /// Not independent: it can fail a run, never raise one. reference_check_mean_kl is taken
  /// within the reference's printed digits (as mean_kl_within_print) and decides; _printed
  /// is at its values as printed (a pass that needs the digits' slack is capped).
  bool reference_checked = false;
  double reference_check_mean_kl = 0, reference_check_bound = 0;
  /// The reference check's mean KL over the steps holding full logits (0 without any),
  /// held to reference_check_bound on its own as mean_full_kl is.
  double reference_check_mean_full_kl = 0;  ///< within the printed digits (decides)
  double reference_check_mean_full_kl_printed = 0;
  double reference_check_mean_kl_printed = 0;
  std::string reference_check_dtype;
  bool reference_check_pass = true;
  /// The hidden states a golden records (embedding, every layer's output and the final norm
  /// at the last prompt position) against the engine's, by diagnosis.hpp's rules, where a
  /// golden records them (VerifyOptions::golden_layers). A golden whose final norm alone
  /// was scaled 1.05 passed the logit gates. A quantized engine differs from the golden by
  /// its quantization (the KLD gate's to judge), so llmport's fp32 oracle (not independent)
  /// stands in for it: its departure caps the verdict instead of failing it; a bf16/fp16
  /// engine agreeing within its own budget has the oracle held beside it the same way. A record the
  /// golden's own next record contradicts (the engine agreeing with the oracle there) is
  /// the golden's damage: ConfigError naming file and sequence (exit 2), before the run.
  int golden_layer_sequences = 0;     ///< sequences compared (0: none recorded, or not run)
  std::string golden_layers_departs;  ///< "" or "sequence S: <record>: <rule>"
  bool golden_layers_gating = true;   ///< false: the fp32 oracle departs (an engine not computing in fp32)
  /// Golden sequences recording no per-layer hidden states: held to the logit gates only,
  /// and named in the report (all of them for a golden recording none).
  std::vector<std::string> golden_layers_unrecorded;
  bool golden_layers_pass() const { return golden_layers_departs.empty() || !golden_layers_gating; }
  /// "kld" gate only: the format's predicted cost on this model (predict_quant_cost: the
  /// smaller of the costs of independent errors of the format's step and of llmport's
  /// quantizer, each against the same computation with nothing rounded, teacher-forced
  /// along the reference's tokens; not independent, and not a correctness check: both sides
  /// share llmport's forward, so it measures the rounding only): mean KL per step (nats)
  /// and top-1 agreement (0..1), and the two models' mean KL. The default bounds come from
  /// it (derived_kld_gate).
  double predicted_mean_kl = 0;
  double predicted_top1 = 1;
  double predicted_noise_kl = 0, predicted_quantizer_kl = 0;
  std::string kernel_base_dtype;   ///< the twin's dtype of its unquantized tensors (fp32)
  /// Bound on kernel_mean_kl: kernel_kl_bound_for(the twin's dtype), 2e-6.
  double kernel_kl_bound = 0;
  bool kernel_pass = true;         ///< kernel_mean_kl <= kernel_kl_bound
  std::string kernel_worst_where;  ///< the step of kernel_max_kl, with both top-5
  KlKind kl_kind = KlKind::Coarsened;
  double mean_kl = 0, max_kl = 0;  ///< KL per step at the reference's values as printed
  /// mean_kl with each step's reference values at their most favourable within the digits
  /// the file printed (TeacherForcedStep::kl_within_print): what the mean KL gate
  /// holds to kl_bound. Rounding a reference adds to its KL from any engine on average, so
  /// mean_kl <= kl_bound is a plain pass; where only this meets the bound the pass rests on
  /// digits the reference lacks and is capped at PASS-with-warnings.
  double mean_kl_within_print = 0;
  /// The largest StepRecord::print_resolution() among the compared reference steps (nats).
  double reference_print_resolution = 0;
  /// Teacher-forced steps compared over the whole vocabulary (TeacherForcedStep::
  /// full_vocabulary) and their own mean KL: held to kl_bound on their own as well, so a
  /// few of them among many coarsened steps are not averaged away (a swap among the
  /// unlisted ids costing 1e-5 at each full step would read 3e-7 over 32x as many steps).
  /// Not under the KLD gate, whose bound is the format's mean cost over all steps (a
  /// quantized engine's full-vocabulary KL runs 2-3x its coarsened one on the synthetic
  /// models): there the reference check holds them on their own, at the fp32 bound.
  /// 0 steps: the reference lists only its top-k everywhere, which caps the verdict.
  int64_t full_kl_steps = 0;
  double mean_full_kl = 0;  ///< at the reference's values as printed
  /// The same within the digits the full logits were printed with (kl_full_within_print):
  /// what is held to kl_bound; a pass that needs the digits' slack is capped.
  double mean_full_kl_within_print = 0;
  /// mean_full_kl_within_print <= kl_bound where it is held on its own (above).
  bool full_kl_pass() const {
    return gate == "kld" || full_kl_steps == 0 || mean_full_kl_within_print <= kl_bound;
  }
  /// mean_kl_within_print <= kl_bound and full_kl_pass() (NaN fails).
  bool mean_kl_pass() const { return mean_kl_within_print <= kl_bound && full_kl_pass(); }
  double top1_agreement = 0;  ///< 0..1 over all teacher-forced steps
  bool free_running_pass = false, teacher_forced_pass = false;
  std::vector<PromptVerdict> prompts;
  std::vector<std::string> failures;  ///< one line each; failures[0] is the first
  std::vector<std::string> warnings;
  /// Why a passing run is not a plain PASS (reference not independent, depth below the
  /// minimum, a non-shipped hf program, the reference backend as engine, a planted fault);
  /// independence first.
  std::vector<std::string> caps;
  /// Prompts with different ids among `prompts` (a repeated prompt adds no depth).
  int distinct_prompts() const;
  /// Teacher-forced steps with different inputs: step i of a prompt reads its prompt ids and
  /// the reference's first i tokens, so a prompt that is another's prompt plus some of its
  /// tokens repeats that prompt's steps (four prefixes of one story are one trajectory).
  int distinct_steps() const;
  /// "FAIL" when !pass, "PASS-with-warnings" when caps, else "PASS".
  std::string verdict() const;
  /// The verdict with its caps: "PASS-with-warnings (reference not independent: oracle)".
  std::string verdict_line() const;
  std::string started_at;  ///< ISO 8601 UTC
  double wall_s = 0;
  std::filesystem::path report_dir;  ///< where report.json/report.md went ("" if none)

  nlohmann::json to_json() const;
  std::string to_markdown() const;
};

/// Refuses a prompt file beside a golden reference (`reference` in `--reference`'s spelling,
/// "golden:FILE"): a golden replays the prompts it holds, so the file would be silently
/// unused. verify and deploy call it before anything runs or is written. Throws
/// UsageError naming `prompts_file`; an empty path is no prompt file.
void check_prompts_beside_reference(const std::string& reference, const std::filesystem::path& prompts_file);

/// Runs the gate on the model in `model_dir` (loads config, weights, tokenizer if any).
/// Returns PASS/FAIL in the result (never throws for a FAIL); writes report.json and
/// report.md into opt.report_dir when set. Throws UsageError/ConfigError (exit 2) for bad
/// input: unreadable golden, ids outside the vocabulary, no prompts for a model without
/// tokenizer, hf reference unavailable.
VerifyResult run_verify(const std::filesystem::path& model_dir, const VerifyOptions& opt);

/// Writes report.json and report.md of `r` into `dir` (created; existing files are not
/// overwritten: throws UsageError).
void write_verify_report(const std::filesystem::path& dir, const VerifyResult& r);

/// Default report directory: `<cwd>/verify/reports/<time>/` when the current directory is
/// a deployment (holds deployment.json), else `<cwd>/llmport-reports/<time>/`; <time> is
/// UTC YYYYmmdd-HHMMSS, with a -N suffix when that directory exists. The directory is
/// created here (claimed: concurrent callers get distinct directories); a caller whose run
/// fails before writing into it removes it. Throws std::filesystem::filesystem_error when
/// the base directory cannot be created.
std::filesystem::path default_report_dir();

// ---------------------------------------------------------------- prompts

/// One prompt: text (rendered through the chat template for an instruct set) or ids.
struct PromptSpec {
  std::string name;
  std::optional<std::string> text;
  std::optional<std::vector<int>> ids;
};

/// Reads a prompt file: {"name", "description", "chat": bool, "prompts": [{"name",
/// "description", "text"|"prompt", "prompt_ids"}]}, a JSON array of such objects, or a JSON
/// array of strings. `chat` (when non-null) receives the file's "chat" (render the texts
/// through the chat template or not; unset when the file does not say). Throws ConfigError
/// naming the file and entry, also for a key verify would not read but that says how to run
/// ("n_steps", "max_new_tokens", "messages", a prompt's own "chat", ...: ignored, they ran
/// otherwise than the file said); descriptive keys ("kind") are free.
std::vector<PromptSpec> read_prompt_file(const std::filesystem::path& file, std::optional<bool>* chat = nullptr);
/// Seed of the built-in id prompt set.
inline constexpr uint64_t kIdPromptSeed = 20240607;
/// The built-in "ids" prompt set for a model without a tokenizer: 8 prompts of
/// deterministic token ids in [0, vocab_size) (splitmix64 from kIdPromptSeed, id = draw mod
/// vocab_size), lengths 20, 1, 8, 33, 3, 12, 48, 5, each capped at max(1, context - n_steps)
/// so prompt + steps fit the context. Throws UsageError when vocab_size <= 0.
std::vector<PromptSpec> builtin_id_prompts(int vocab_size, int context, int n_steps = kDefaultSteps);
/// Directory of the built-in prompt sets: <data dir>/prompts (llmport/data_dir.hpp).
/// Throws UsageError when there is no data directory.
std::filesystem::path prompt_set_dir();

}  // namespace llmport
