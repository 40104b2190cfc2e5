// `llmport check MODEL [--json] [--max-seq N] [--weights] [--scan-values]`: the
// architecture gate, and with --weights the phase-0 checks (every tensor loadable with the
// right shape; --scan-values also rejects NaN/Inf weights and weights whose square overflows
// fp32, see overflow_magnitude in llmport/model_checks.hpp).
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/dtype_warning.hpp"
#include "cli/engine_flags.hpp"
#include "cli/option_checks.hpp"
#include "llmport/compat.hpp"
#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/model_checks.hpp"
#include "llmport/model_config.hpp"
#include "llmport/quant_plan.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/weights.hpp"

namespace llmport::cli {
namespace {

struct CheckArgs {
  std::string model;
  bool json = false;
  bool weights = false;
  bool scan_values = false;
  int max_seq = 0;
  std::string dtype;            ///< q8_0|q4_0: list what a quantized deployment holds
  std::string quantize_lm_head;
};

// --dtype q8_0|q4_0 [--quantize-lm-head q8_0|q4_0]: the plan (base dtype: the checkpoint's).
std::optional<QuantPlan> quant_plan_of(const CheckArgs& a, const ModelConfig& cfg, const std::filesystem::path& dir) {
  if (a.dtype.empty() && !a.quantize_lm_head.empty())
    throw UsageError("--quantize-lm-head needs a quantized --dtype (q8_0 or q4_0)");
  if (a.dtype.empty()) return std::nullopt;
  const QuantType q = parse_quant(a.dtype);
  if (q == QuantType::None)
    throw UsageError("--dtype '" + a.dtype + "': check lists quantized deployments (q8_0, q4_0)");
  const QuantType head = a.quantize_lm_head.empty() ? QuantType::None : parse_quant(a.quantize_lm_head);
  if (!a.quantize_lm_head.empty() && head == QuantType::None)
    throw UsageError("--quantize-lm-head '" + a.quantize_lm_head + "': expected q8_0 or q4_0");
  // The engine's base dtype (the checkpoint's); bf16 for a bare config.json that states none.
  return plan_quantization(cfg, checkpoint_dtype(cfg, dir, DType::BF16), q, head);
}

// weights_fail: --weights found the checkpoint unusable; the ACCEPT is the architecture's
// only, and the first line says so (a script reading it must not take the model as good).
void print_text(const CompatResult& r, const std::vector<std::string>& notes, const nlohmann::json& resolved,
                bool weights_fail) {
  std::cout << r.message << (weights_fail ? " (architecture only: the phase-0 checks below FAIL)" : "") << "\n";
  if (!r.accepted && r.reasons.size() > 1) {
    std::cout << "  reasons:";
    for (const auto& x : r.reasons) std::cout << " " << x;
    std::cout << "\n";
  }
  for (const auto& n : notes) std::cout << "  note: " << n << "\n";
  if (!r.accepted) std::cout << "  resolved (informational for a REJECT):\n";
  for (const char* k : {"n_layers", "emb_dim", "n_heads", "n_kv_heads", "head_dim", "hidden_dim", "vocab_size",
                        "rope_theta", "rope_scaling_type", "tie_word_embeddings", "qkv_bias", "qk_norm",
                        "max_position_embeddings", "max_seq", "rms_norm_eps", "torch_dtype", "stop_ids"})
    if (resolved.contains(k)) std::cout << "  " << k << ": " << resolved[k].dump() << "\n";
}

// `check --json` answers with one JSON object even when there is no verdict (a missing
// or malformed config, damaged weights): a script reading stdout gets the error and the
// exit code instead of an empty stream.
void print_json_error_object(const std::string& error, int code) {
  const nlohmann::json out = {{"verdict", code == kExitRejected ? "REJECT" : "ERROR"},
                              {"error", error},
                              {"exit_code", code}};
  std::cout << out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  std::cout.flush();
}

void print_json_error(const std::exception& e) {
  const auto* le = dynamic_cast<const Error*>(&e);
  print_json_error_object(e.what(), le ? le->exit_code() : kExitBadInput);
}

int run_check(const CheckArgs& a) {
  const std::string where = resolve_model_dir(a.model, /*config_only=*/!a.weights);
  const std::optional<int> max_seq = context_cap(a.max_seq);
  // One read of config.json: the gate, and for an ACCEPT the full resolution (a missing
  // field of an accepted architecture is bad input, exit 2).
  const ConfigCheck checked = check_model_config(where, max_seq);
  const auto& file = checked.file;
  const CompatResult& r = checked.gate;
  const nlohmann::json resolved = r.accepted ? checked.config->to_json() : r.resolved;
  std::optional<Phase0Report> report;
  if (r.accepted && a.weights) report = check_model_dir(file, max_seq, a.scan_values);
  // Without --weights the safetensors headers are still checked against the file sizes (a
  // truncated download would otherwise ACCEPT) and, where there are weights, every tensor
  // the model needs is looked up with its shape (a missing one is named): the files are
  // mapped, no weight bytes are read (but a tied model's stored lm_head, compared with the
  // embedding).
  std::vector<std::string> notes = r.notes;
  if (r.accepted && !a.weights) {
    if (!check_safetensors_headers(file.parent_path()).empty())
      (void)WeightStore::open(file.parent_path(), *checked.config);
    else  // an ACCEPT of a config alone says nothing about weights: say so
      notes.push_back("no weights beside " + file.filename().string() + " in " + file.parent_path().string() +
                      ": only the architecture was checked");
  }
  // The tokenizer beside the config is part of the model: a malformed one is bad input
  // (exit 2) here as it is for deploy and run, not an ACCEPT.
  if (r.accepted && Tokenizer::exists(file.parent_path())) (void)Tokenizer::load(file.parent_path());
  const std::optional<QuantPlan> plan = r.accepted ? quant_plan_of(a, *checked.config, file.parent_path()) : std::nullopt;
  std::vector<std::string> warnings;
  if (r.resolved.contains("torch_dtype") && r.resolved["torch_dtype"].is_string())
    if (auto w = torch_dtype_warning(r.resolved["torch_dtype"].get<std::string>(), file.string()))
      warnings.push_back(*w);
  for (const auto& w : warnings) std::cerr << "warning: " << printable(w) << "\n";
  const bool phase0_failed = report && !report->pass;
  const int exit_code = !r.accepted ? kExitRejected : phase0_failed ? report->exit_code : kExitOk;
  if (a.json) {
    // "verdict" is what the exit code says: an accepted architecture whose weights fail
    // the phase-0 checks is not an ACCEPT (ERROR for damaged weights, FAIL for a failed
    // check); "architecture" keeps the gate's own answer.
    const char* verdict = !r.accepted ? "REJECT" : !phase0_failed ? "ACCEPT"
                          : exit_code == kExitCheckFailed        ? "FAIL"
                                                                  : "ERROR";
    nlohmann::json out = {{"verdict", verdict},
                          {"architecture", r.accepted ? "ACCEPT" : "REJECT"},
                          {"exit_code", exit_code},
                          {"reason", r.accepted ? nlohmann::json(nullptr) : nlohmann::json(r.reason)},
                          {"reasons", r.reasons},
                          {"message", r.message},
                          {"notes", notes},
                          {"warnings", warnings},
                          {"context_cap", r.context_cap ? nlohmann::json(*r.context_cap) : nlohmann::json(nullptr)},
                          {"config", file.string()},
                          {"resolved", resolved}};
    if (report) out["phase0"] = report->to_json();
    if (phase0_failed) out["error"] = report->error;
    if (plan) out["quantization"] = to_json(*plan);
    std::cout << out.dump(1) << "\n";
  } else {
    print_text(r, notes, resolved, report && !report->pass);
    if (plan) std::cout << quant_plan_text(*plan);
    if (report) std::cout << report->to_text();
  }
  if (phase0_failed) {
    std::cout.flush();
    std::cerr << "error: " << printable(report->error) << "\n";
  }
  return exit_code;
}

const Registrar reg{{"check", "architecture gate: ACCEPT or REJECT(reason) from config.json, with the safetensors "
                              "headers checked against the file sizes and for every tensor the model needs; --weights also loads and validates every tensor",
                     [](CLI::App& sub) -> std::function<int()> {
      sub.footer(
          "exit codes: 0 ACCEPT (with --weights: and the phase-0 checks passed), 3 REJECT (architecture "
          "not supported), 2 bad input (missing/malformed config.json, weights or tokenizer, a --scan-values FAIL: "
          "NaN/Inf or |w| > sqrt(FLT_MAX) in a weight, bad flag), 1 the config_consistency check "
          "failed (--weights)");
                       auto a = std::make_shared<CheckArgs>();
                       add_model_arg(sub, &a->model);
                       sub.add_flag("--json", a->json, "print one JSON object: verdict ACCEPT | REJECT | ERROR | FAIL and exit_code always; error when the model cannot be judged or its weights fail the phase-0 checks");
                       sub.add_option("--max-seq", a->max_seq,
                                      "context cap in tokens (<= a sliding window makes it harmless)")
                           ->check(at_least(1));
                       sub.add_option("--dtype", a->dtype,
                                      "q8_0 | q4_0: list which tensors a quantized deployment quantizes "
                                      "and the weight bytes read per token");
                       sub.add_option("--quantize-lm-head", a->quantize_lm_head, "q8_0 | q4_0: lm_head too");
                       sub.add_flag("--weights", a->weights,
                                    "also run the phase-0 checks: load every tensor and check its shape");
                       sub.add_flag("--scan-values", a->scan_values,
                                    "with --weights (implied): also fail on NaN/Inf or |w| > sqrt(FLT_MAX) ~ 1.84e19 (its "
                                    "square overflows fp32) in any weight (exit 2, damaged weights are bad input); warn on "
                                    "|w| >= 65520 (rounds to Inf in fp16, whose max is 65504); reads all bytes");
                       return [a] {
                         if (a->scan_values) a->weights = true;
                         if (!a->json) return run_check(*a);
                         try {
                           return run_check(*a);
                         } catch (const std::exception& e) {
                           print_json_error(e);
                           throw;  // main prints the one-line error and returns its exit code
                         }
                       };
                     }}};

}  // namespace

bool print_check_json_error(const std::vector<std::string>& args, const std::string& error, int exit_code) {
  if (args.empty() || args.front() != "check") return false;
  // Words after `--` are operands, not flags.
  const auto end = std::find(args.begin(), args.end(), "--");
  if (std::find(args.begin(), end, "--json") == end) return false;
  print_json_error_object(error, exit_code);
  return true;
}

}  // namespace llmport::cli
