#pragma once
// Records that verification compares: what one side (engine, oracle, a golden file
// produced elsewhere) computed at each position, and the record files that hold them.
// Three file formats are read as they are:
//   - llmport's own `llmport-records/1` JSON (+ a safetensors side file for full logits
//     and hidden states), written by write_record_file and tools/hf_reference.py;
//   - the stories260K golden (`cases[]` with text prompts, `steps[].top5`, logsumexp);
//   - the synthetic golden `llmport-synthetic-golden/1` (`sequences[]` of input ids).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace llmport {

/// Number of top entries the gates look at (top-5, as vLLM `check_logprobs_close`).
inline constexpr int kTopK = 5;

/// One (id, logit) entry of a top-k list.
struct TopEntry {
  int id = -1;
  float logit = 0.0f;
};

/// The k highest logits of `logits` [vocab], sorted by logit descending, ties toward the
/// smaller id (the goldens' convention). NaN logits sort last.
std::vector<TopEntry> top_k(std::span<const float> logits, int k = kTopK);
/// Greedy choice: the largest logit, ties toward the smaller id; -1 for an empty span.
int argmax_lowest_id(std::span<const float> logits);
/// log(sum(exp(logits))) in fp64 (max-subtracted).
double log_sum_exp(std::span<const float> logits);

/// What one side computed at one position: the distribution over the next token.
struct StepRecord {
  int token = -1;                   ///< token this side chose here (greedy)
  std::vector<TopEntry> top;        ///< top-k, sorted (logit desc, id asc)
  std::optional<double> logsumexp;  ///< over the whole vocabulary, when known
  std::vector<float> logits;        ///< [vocab] full logits; empty when not recorded
  /// Half a unit in the last digit its file printed its logsumexp with, and the largest
  /// such half unit among the top logits that carry probability (those within
  /// kPrintMassWindow nats of the top-1; nats; "%.6g" at ~35: 5e-5 each; exact float32
  /// values written in full: ~1e-15). Set by read_record_file from the digits of the
  /// numbers; 0 for records llmport computes. The coarsened KL gate lets the values move
  /// that far (kl_coarsened_within_print) and the reader's consistency checks allow it.
  double lse_half_unit = 0.0, logit_half_unit = 0.0;
  /// [top.size()] each top logit's own half unit, as read (empty: logit_half_unit for
  /// each). Per entry, because a half unit grows with the value: one entry printed as
  /// -1e30 (no probability at all) must not lend its +-5e13 to the entries that carry the
  /// step's mass.
  std::vector<double> top_half_units;
  /// Half unit of top entry i (top_half_units[i], else logit_half_unit).
  double top_half_unit(std::size_t i) const { return i < top_half_units.size() ? top_half_units[i] : logit_half_unit; }
  /// How far (nats) a printed log-probability logit - logsumexp of the step's likely
  /// tokens may lie from the value the reference computed: lse_half_unit + logit_half_unit.
  double print_resolution() const { return lse_half_unit + logit_half_unit; }
  /// Builds a record from full logits: token = argmax (ties -> smaller id), top-k,
  /// logsumexp; keeps the logits only when keep_logits.
  static StepRecord from_logits(std::span<const float> logits, bool keep_logits, int k = kTopK);
  /// Whether any of the recorded logits is NaN or infinite.
  bool non_finite() const;
};

/// Hidden states of a prefill at some positions (all of them for a computing runner,
/// only the last one for the shared goldens).
struct HiddenStates {
  int emb_dim = 0;
  std::vector<int> positions;                 ///< [n_rows] positions the rows refer to
  std::vector<float> embedding;               ///< [n_rows, emb_dim], may be empty
  std::vector<std::vector<float>> layer_out;  ///< [n_layers][n_rows, emb_dim] residual after layer il
  std::vector<float> final_norm;              ///< [n_rows, emb_dim] after model.norm
  int n_rows() const { return static_cast<int>(positions.size()); }
  bool empty() const { return layer_out.empty() && final_norm.empty(); }
  /// Per-layer records present: what the layer checks against a golden compare (phase 2's
  /// layer 0, phase 3's every layer, the phase-7 audit row).
  bool has_layers() const { return !layer_out.empty(); }
};

/// Result of a prefill: the distribution at the last prompt position (step 0) and, when
/// asked for, the hidden states.
struct PrefillRecord {
  StepRecord last;
  HiddenStates hidden;
};

/// One prompt's reference trajectory: prompt ids and the greedy steps from it.
/// steps[i] is the distribution at position prompt_ids.size() - 1 + i and steps[i].token
/// is generated token i (steps[i + 1] comes from feeding steps[i].token).
struct RecordSequence {
  std::string name;
  std::optional<std::string> prompt;  ///< prompt text when the file has one
  std::string prompt_rendering = "raw";  ///< "raw", "chat_template" or "ids"
  std::vector<int> prompt_ids;
  std::vector<StepRecord> steps;
  HiddenStates hidden;  ///< at the last prompt position (goldens) or all prompt positions
  /// What the reference printed for its ids, where the file says it (stories golden
  /// `full_text`, `completion_text`, `prompt_tokens` + `generated_tokens`; llmport-records/1
  /// the same keys): verify holds llmport's tokenizer to them (decode, pieces, round trip)
  /// where they overlap the ids.
  std::optional<std::string> full_text;        ///< decode(prompt_ids + tokens), special tokens skipped
  std::optional<std::string> completion_text;  ///< the text the tokens add to the prompt's
  std::vector<std::string> prompt_pieces;     ///< vocabulary strings of prompt_ids (as many as stated)
  std::vector<std::string> generated_pieces;  ///< vocabulary strings of the tokens (as many as stated)
  /// Generated tokens (steps[i].token).
  std::vector<int> tokens() const;
};

/// A whole record file.
struct RecordFile {
  std::string format;  ///< "llmport-records/1", "stories-golden", "llmport-synthetic-golden/1"
  std::filesystem::path path;
  std::string model;        ///< model name the file states
  /// HF classes the file states (`architecture` or `architectures`, a string or a list, at
  /// the root or in its `reference` object: {"Qwen2ForCausalLM"}); empty when unstated.
  std::vector<std::string> architectures;
  std::string producer;     ///< tool that produced it (e.g. numpy reference, transformers)
  std::string compute_dtype;  ///< e.g. "float32", "bfloat16" ("" when unstated)
  /// The file's statement: false when it says `"independent": false` (produced by llmport
  /// itself); true when it says true or nothing. Not trusted alone: see
  /// assess_provenance and the content check in verify.hpp.
  bool independent = true;
  /// Versions the producing program reported (llmport-records/1 "versions", e.g. python,
  /// torch, transformers for tools/hf_reference.py).
  std::map<std::string, std::string> versions;
  int n_steps = 0;          ///< steps per sequence
  std::vector<RecordSequence> sequences;
  /// Fields the verdict does not use that contradict the ones it does, one line each
  /// ("<file>: cases[0].steps[4].position: is not len(prompt_ids) - 1 + step = 8"): the
  /// stories golden's step index, position and top-1 margins. Said (verify prints them as
  /// warnings), not refused: the file's top lists and ids are still what is compared.
  std::vector<std::string> unused_field_contradictions;
};

/// Reads a record file in any of the three formats (detected from its content).
/// Throws ConfigError "<file>: <field>: <problem>" for malformed JSON, missing fields,
/// inconsistent lengths (e.g. generated ids vs steps) or a missing/corrupt side file.
RecordFile read_record_file(const std::filesystem::path& file);

struct ModelConfig;

/// Whether a record file was made for this model, before anything compares against it
/// (verify, diagnosis, deploy): an `architectures` it states must include the model's
/// class, every id it names (prompt ids, tokens, top ids) must lie in [0, vocab_size),
/// every full-logits row hold vocab_size values, and recorded hidden states be hidden_size
/// wide with one output per layer ([n_layers][n_rows, emb_dim]; embedding and final_norm
/// [n_rows, emb_dim] when present), and each step's logsumexp be one its top-k list allows
/// over vocab_size logits: the other vocab_size - k logits are at most the list's smallest,
/// so logsumexp <= log(sum_top exp(l_i) + (vocab_size - k) exp(l_k)) (within each value's
/// printed half unit). A list of filler entries far below the top-1 beside an honest
/// logsumexp breaks it (the rest of the mass has nowhere to be) and would reduce the KL gate
/// to a top-1 check. Throws UsageError "<file>: <where>: ..." naming both sides and the
/// model the file states, else returns.
void check_record_fits_model(const RecordFile& ref, const ModelConfig& cfg);

/// Writes `rf` as `llmport-records/1`: `file` (JSON: ids, top-k, logsumexp) plus, when any
/// sequence carries full logits or hidden states, the side file `<file stem>.safetensors`
/// next to it (tensors `seq<i>.logits` [rows, vocab]: one row per step holding full logits,
/// those steps listed as the sequence's `logits_steps` unless that is every step;
/// `seq<i>.embedding`, `seq<i>.layer_out` [n_layers, n_rows, emb_dim], `seq<i>.final_norm`,
/// fp32). Throws WeightsError/ConfigError on I/O failure, and ConfigError (nothing written)
/// for a sequence whose steps hold full logits of two widths.
void write_record_file(const std::filesystem::path& file, const RecordFile& rf);

}  // namespace llmport
