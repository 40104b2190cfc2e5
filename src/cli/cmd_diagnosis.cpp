// `llmport diagnosis MODEL --prompt TEXT`: per-layer cosine of the engine against the
// oracle or a golden file; markdown (default), JSON (--json), SVG plot (--svg FILE).
// A flagged layer is a failed check: exit 1 (0 when none is flagged, 2 bad input).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/engine_flags.hpp"
#include "cli/option_checks.hpp"
#include "llmport/diagnosis.hpp"
#include "llmport/dtype.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/weights.hpp"

namespace llmport::cli {
namespace {

struct DiagArgs {
  std::string model;
  std::string prompt;
  bool prompt_is_ids = false;
  std::string reference = "oracle";
  bool json = false;
  std::string svg;
  std::string out_dir;
  bool force = false;  // --force: replace existing output files
  std::string dtype;
  std::string quantize_lm_head;
  std::string backend = "cpu";
  std::string fault;
  int threads = 0;
  int max_seq = 0;  // context cap (a sliding-window model <= the cap)
};


int run_diagnosis_cmd(const DiagArgs& a) {
  namespace fs = std::filesystem;
  // Outputs are checked before any work: an existing file is kept unless --force.
  const Overwrite policy = a.force ? Overwrite::Always : Overwrite::Refuse;
  if (!a.svg.empty()) {
    check_output_parent(a.svg, "--svg");
    check_output_path(a.svg, policy);
  }
  const char* out_names[] = {"diagnosis.md", "diagnosis.json", "diagnosis.svg"};
  if (!a.out_dir.empty()) {
    std::error_code ec;
    if (fs::exists(a.out_dir, ec) && !fs::is_directory(a.out_dir, ec))
      throw UsageError("--out " + a.out_dir + ": exists and is not a directory");
    for (const char* name : out_names) check_output_path(fs::path(a.out_dir) / name, policy);
  }
  const std::string dir = resolve_model_dir(a.model);
  const ModelConfig cfg = load_model_config(dir, context_cap(a.max_seq));
  const WeightStore weights = WeightStore::open(dir, cfg);
  std::unique_ptr<Tokenizer> tok;
  if (Tokenizer::exists(dir)) tok = Tokenizer::load(dir);

  std::shared_ptr<RecordFile> golden;
  if (a.reference.rfind("golden:", 0) == 0) {
    if (a.reference.size() == 7) throw UsageError("--reference golden:FILE: FILE is empty");
    golden = std::make_shared<RecordFile>(read_record_file(a.reference.substr(7)));
    check_record_fits_model(*golden, cfg);
  } else if (a.reference != "oracle") {
    throw UsageError("--reference: unknown value '" + a.reference + "' (expected oracle or golden:FILE)");
  }
  std::vector<int> ids;
  std::optional<std::string> text;
  if (!a.prompt.empty()) {
    if (a.prompt_is_ids) {
      ids = parse_id_list(a.prompt, "--prompt-ids");
    } else {
      if (!tok)
        throw UsageError(dir + " has no tokenizer.json: pass token ids with --prompt-ids");
      ids = tok->encode(a.prompt);
      text = a.prompt;
    }
  }
  int seq_index = -1;
  if (golden) {
    for (std::size_t i = 0; i < golden->sequences.size() && seq_index < 0; ++i) {
      const auto& s = golden->sequences[i];
      if ((!ids.empty() && s.prompt_ids == ids) || (a.prompt.empty() && i == 0) ||
          (!a.prompt_is_ids && (s.name == a.prompt || (s.prompt && *s.prompt == a.prompt))))
        seq_index = static_cast<int>(i);
    }
    if (seq_index < 0) {
      std::string names;
      for (const auto& s : golden->sequences) names += (names.empty() ? "" : ", ") + s.name;
      throw UsageError(golden->path.string() + ": no sequence with this prompt (the golden has: " + names + ")");
    }
    const auto& s = golden->sequences[static_cast<std::size_t>(seq_index)];
    ids = s.prompt_ids;
    text = s.prompt;
  }
  if (ids.empty()) throw UsageError("diagnosis: --prompt TEXT is required (or --reference golden:FILE)");
  for (int id : ids)
    if (id < 0 || id >= cfg.vocab_size)
      throw UsageError("--prompt: token id " + std::to_string(id) + " outside the vocabulary [0, " +
                       std::to_string(cfg.vocab_size) + ")");
  // As run says it (the KV cache's own overflow error reads as an engine fault).
  if (cfg.max_seq > 0 && static_cast<int64_t>(ids.size()) > cfg.max_seq)
    throw UsageError("the prompt is " + std::to_string(ids.size()) + " tokens, longer than the model context of " +
                     std::to_string(cfg.max_seq) + " tokens");

  const EngineOptions eo =
      engine_options_from_flags({a.backend, a.threads, dtype_flag(a.dtype), /*registry=*/"", a.fault, a.quantize_lm_head});
  EngineRunner engine(cfg, weights, eo, "engine");
  std::unique_ptr<Runner> ref;
  // A quantized engine is compared with an oracle holding the same quantized weights
  // (dequantized exactly): the per-layer cosines then locate kernel faults, not the
  // quantization's own error (which a golden of the unquantized model shows).
  if (golden) ref = std::make_unique<GoldenRunner>(golden, seq_index);
  else ref = make_oracle_runner(cfg, weights, a.threads, eo.quant, eo.quant_lm_head, engine.engine().quant_acts());
  DiagnosisResult d;
  try {
    d = run_diagnosis(engine, *ref, ids);
  } catch (const UsageError& e) {
    // A golden whose hidden states do not fit the model (another layer count, none at all):
    // named by file and sequence.
    if (!golden) throw;
    throw UsageError(golden->path.string() + ": sequence " + golden->sequences[static_cast<std::size_t>(seq_index)].name +
                     ": " + e.what());
  }
  // A golden record that the next one contradicts is bad input when it is the golden's
  // (the engine agrees with llmport's oracle there); else it stays the report's finding.
  if (golden && !d.record_inconsistency.empty()) {
    const auto oracle = make_oracle_runner(cfg, weights, a.threads, eo.quant, eo.quant_lm_head, engine.engine().quant_acts());
    if (golden_record_damaged(d, run_diagnosis(engine, *oracle, ids)))
      throw UsageError(golden->path.string() + ": sequence " + golden->sequences[static_cast<std::size_t>(seq_index)].name +
                       ": hidden states: " + d.record_inconsistency +
                       (d.reference_non_finite
                            ? ""
                            : "; the engine agrees with llmport's oracle there, so the golden's record is the damaged one"));
  }
  d.planted_fault = eo.fault.spec;
  d.blind_spot = diagnosis_blind_spot(eo.fault);
  if (!d.blind_spot.empty()) std::cerr << "warning: " << d.blind_spot << "\n";
  d.model = dir;
  d.prompt = text;
  if (!a.svg.empty()) write_output_file(a.svg, d.to_svg(), policy);
  if (!a.out_dir.empty()) {
    const fs::path od = a.out_dir;
    for (const char* name : out_names) check_output_path(od / name, policy);
    write_output_file(od / "diagnosis.md", d.to_markdown(), policy);
    write_output_file(od / "diagnosis.json", d.to_json().dump(1) + "\n", policy);
    write_output_file(od / "diagnosis.svg", d.to_svg(), policy);
  }
  if (a.json) std::cout << d.to_json().dump(1) << "\n";
  else std::cout << d.to_markdown();
  // A flagged layer is a failed check (the project's exit 1), so scripts and `make
  // diagnosis` see it without parsing the report.
  const bool flagged = !d.record_inconsistency.empty() ||
                       std::any_of(d.rows.begin(), d.rows.end(), [](const DiagnosisRow& r) { return r.flagged; });
  return flagged ? kExitCheckFailed : kExitOk;
}

Registrar reg{Command{
    "diagnosis", "Per-layer cosine of the engine against a reference; flags the first suspicious layer",
    [](CLI::App& sub) -> std::function<int()> {
      sub.footer("exit codes: 0 nothing flagged, 1 a layer or the final norm flagged (the report names the first suspicious "
                 "layer and why), 2 bad input (model, prompt, golden, output path, flag), 3 architecture "
                 "rejected");
      auto a = std::make_shared<DiagArgs>();
      add_model_arg(sub, &a->model);
      sub.add_option("-p,--prompt", a->prompt, "prompt text (or ids with --prompt-ids)");
      sub.add_flag("--prompt-ids", a->prompt_is_ids, "--prompt holds token ids (\"1,2,3\" or \"[1, 2, 3]\")");
      sub.add_option("--reference", a->reference, "oracle | golden:FILE")->capture_default_str();
      sub.add_flag("--json", a->json, "print JSON instead of the markdown table");
      sub.add_option("--svg", a->svg, "write an SVG plot of cosine per layer to FILE");
      sub.add_option("--out", a->out_dir, "also write diagnosis.md, diagnosis.json and diagnosis.svg into DIR");
      sub.add_flag("--force", a->force, "replace existing --svg / --out files");
      sub.add_option("--dtype", a->dtype, "engine compute dtype: bf16|fp16|fp32, or q8_0|q4_0 (default: checkpoint dtype)");
      sub.add_option("--quantize-lm-head", a->quantize_lm_head, "q8_0 | q4_0: quantize lm_head too (needs a quantized --dtype)");
      sub.add_option("--backend", a->backend, "engine backend")->capture_default_str();
      sub.add_option("--threads", a->threads, "engine threads (0 = all cores)")->check(thread_count());
      sub.add_option("--max-seq", a->max_seq, "cap the context (tokens)")->check(at_least(1));
      sub.add_option("--inject-fault", a->fault, "test only: plant a fault kind[@layer][=value] in the engine")
          ->group("");
      return [a] {
        if (a->model.empty()) throw UsageError("diagnosis: MODEL is required");
        return run_diagnosis_cmd(*a);
      };
    }}};

}  // namespace
}  // namespace llmport::cli
