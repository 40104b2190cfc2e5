// report.json / report.md of a verify run. Carries what the phase-7 auditor checks:
// runner kind, backend, dtype, dispatch counters, config source, reference kind and
// independence, tolerances, prompt/step/token counts.
#include <ctime>
#include <fstream>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/verify.hpp"
#include "verify/format.hpp"
#include "verify/golden_layers.hpp"

namespace llmport {
namespace fs = std::filesystem;
using verify_detail::fmt_g;
using verify_detail::format_ids;
using verify_detail::format_top;

namespace {
nlohmann::json top_json(const std::vector<TopEntry>& top) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& t : top) a.push_back({{"id", t.id}, {"logit", t.logit}});
  return a;
}
const char* kl_kind_name(KlKind k) { return k == KlKind::Full ? "full" : "coarsened-top5-rest"; }

// ", full at the N steps with full logits: mean KL X" for a coarsened run with such steps.
std::string full_steps_note(const VerifyResult& r) {
  if (r.kl_kind == KlKind::Full) return "";
  if (r.full_kl_steps == 0) return ", no step with full logits";
  return ", full at the " + std::to_string(r.full_kl_steps) + " steps the reference gives full logits for: mean KL " +
         fmt_g(r.mean_full_kl) + ", held to the bound on their own";
}
// One phrase for the reports: which prompt set and how it became token ids.
std::string rendering_description(const std::string& set, const std::string& rendering) {
  if (rendering == "chat_template") return set + " prompts, rendered with the chat template";
  if (rendering == "raw") return set + " prompts, raw text";
  if (rendering == "ids") return set + " prompts, token ids";
  return set + " prompts (" + rendering + ")";
}
}  // namespace

nlohmann::json VerifyResult::to_json() const {
  nlohmann::ordered_json j;
  j["format"] = "llmport-verify-report/1";
  j["verdict"] = verdict();
  j["caps"] = caps;
  j["planted_fault"] = fault.empty() ? nlohmann::json(nullptr) : nlohmann::json(fault);
  j["model"] = model;
  j["model_name"] = model_name;
  j["started_at"] = started_at;
  j["wall_s"] = wall_s;
  j["llmport_version"] = LLMPORT_VERSION;
  j["engine"] = {{"runner", runner_kind},
                 {"shared_runner", "llmport::EngineRunner"},
                 {"backend", backend},
                 {"isa", isa},
                 {"dtype", dtype},
                 {"lm_head", lm_head.empty() ? std::string("unquantized") : lm_head},
                 {"kernel_configs", kernel_configs},
                 {"heuristic_default_configs", heuristic_default_configs},
                 {"dispatch_counters", dispatch_counters}};
  if (!kernel_selection.is_null()) j["engine"]["kernel_selection"] = kernel_selection;
  nlohmann::json matches = nlohmann::json::array();
  for (const auto& m : self_matches)
    matches.push_back({{"against", m.against},
                       {"sequence", m.sequence},
                       {"compared", m.compared},
                       {"identical", m.identical},
                       {"shifted", m.shifted},
                       {"share", m.share()}});
  nlohmann::json directions = nlohmann::json::array();
  for (const auto& c : copy_directions)
    directions.push_back({{"against", c.against},
                          {"sequence", c.sequence},
                          {"entries", c.n},
                          {"far_entries", c.far},
                          {"slope", c.beta},
                          {"slope_se", c.se},
                          {"rms_reference_minus_llmport", c.rms_d},
                          {"rms_fp64_minus_llmport", c.rms_f},
                          {"computations", c.computations},
                          {"copied", c.copied()},
                          {"independent", c.independent()}});
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& m : self_match_steps)
    steps.push_back({{"sequence", m.sequence}, {"steps", m.compared}, {"copied_steps", m.identical}, {"share", m.share()}});
  j["reference"] = {{"kind", reference_kind},
                    {"source", reference_source},
                    {"producer", reference_producer},
                    {"independent", reference_independent},
                    {"independence_finding", independence_finding},
                    {"independence_unshown", independence_unshown},
                    {"ordinary_stop_ids", ordinary_stop_ids},
                    {"tokenizer_files_disagree", tokenizer_files_disagree},
                    {"model_files_not_run", model_files_not_run},
                    {"text_differs", reference_text_differs},
                    {"dtype", reference_dtype},
                    {"sequences", reference_sequences},
                    {"steps", reference_steps},
                    {"self_matches", matches},
                    {"self_match_steps", steps},
                    {"copy_directions", directions},
                    {"copy_direction_rule", "copied when slope + " + fmt_g(kCopyDirectionSigmas) + " x se < " +
                                                fmt_g(kCopyDirectionBeta) + " over >= " +
                                                std::to_string(kCopyDirectionMinEntries) + " entries, of which at most " +
                                                fmt_g(100 * kCopyDirectionFarShare) + "% far (|d| > " +
                                                fmt_g(kCopyDirectionFar) + " x max(rms f, |f|), not fitted)"}};
  if (reference_program.is_object()) j["reference"]["program"] = reference_program;
  j["prompt_set"] = {{"name", prompt_set},
                     {"rendering", prompt_rendering},
                     {"description", rendering_description(prompt_set, prompt_rendering)},
                     {"full", full},
                     {"count", n_prompts}};
  j["counts"] = {{"prompts", n_prompts},
                 {"steps_per_prompt", n_steps},
                 {"engine_tokens_generated", engine_tokens_generated},
                 {"teacher_forced_steps", teacher_forced_steps},
                 {"engine_forward_calls", engine_forward_calls}};
  j["tolerances"] = {{"top_k", top_k}, {"kl_bound", kl_bound}, {"kl_kind", kl_kind_name(kl_kind)},
                     {"kl_statistic", "mean KL(reference || engine) per teacher-forced step, whole run"},
                     {"full_kl_steps", full_kl_steps},
                     {"mean_full_kl", mean_full_kl},
                     {"mean_full_kl_within_print", mean_full_kl_within_print},
                     {"full_kl_statistic", "mean KL over the steps whose reference holds the full logits (the "
                                           "whole vocabulary), held to kl_bound on its own too"}};
  j["gate"] = gate;
  if (reference_checked)
    j["reference_check"] = {{"statistic", "mean KL(reference || llmport's fp32 computation) per teacher-forced "
                                          "step, within the reference's printed digits (not independent: it can "
                                          "fail a run, never raise one)"},
                            {"dtype", reference_check_dtype},
                            {"mean_kl", reference_check_mean_kl},
                            {"mean_kl_printed", reference_check_mean_kl_printed},
                            {"mean_full_kl", reference_check_mean_full_kl},
                            {"mean_full_kl_printed", reference_check_mean_full_kl_printed},
                            {"bound", reference_check_bound},
                            {"pass", reference_check_pass}};
  if (golden_layer_sequences > 0 || !golden_layers_unrecorded.empty())
    j["golden_layers"] = {{"statistic", "the golden's recorded hidden states (embedding, every layer's output, the "
                                        "final norm; last prompt position) against the side's, diagnosis rules"},
                          {"side", golden_layers_gating ? "engine" : "fp32 oracle (not gating: the engine does not compute in fp32)"},
                          {"sequences", golden_layer_sequences},
                          {"sequences_without_hidden_states", golden_layers_unrecorded},
                          {"departs", golden_layers_departs},
                          {"pass", golden_layers_pass()}};
  if (gate == "kld") {
    j["tolerances"]["min_top1_pct"] = 100.0 * min_top1;
    j["tolerances"]["kernel_kl_bound"] = kernel_kl_bound;
    j["tolerances"]["default_kl_bound"] = default_kl_bound;
    j["tolerances"]["default_min_top1_pct"] = 100.0 * default_min_top1;
    j["predicted_cost"] = {{"statistic", "the smaller mean KL per teacher-forced step of two models of the "
                                         "rounding (independent errors of the format's step; llmport's quantizer), "
                                         "each against the same computation with nothing rounded (llmport's own: "
                                         "not independent; it sets the bounds, it checks nothing)"},
                           {"mean_kl", predicted_mean_kl},
                           {"top1_agreement_pct", 100.0 * predicted_top1},
                           {"noise_mean_kl", predicted_noise_kl},
                           {"quantizer_mean_kl", predicted_quantizer_kl},
                           {"kl_factor", kQuantCostKlFactor},
                           {"top1_factor", kQuantCostTop1Factor},
                           {"draws", kQuantCostDraws}};
    j["kernel_check"] = {{"statistic", "mean full-vocabulary KL(oracle || engine with fp32 activations) per "
                                       "teacher-forced step, the oracle holding the engine's own quantized weights "
                                       "(llmport's fp32 kernels: not independent; it checks the kernels, not the "
                                       "quantization)"},
                         {"base_dtype", kernel_base_dtype},
                         {"mean_kl", kernel_mean_kl},
                         {"max_kl", kernel_max_kl},
                         {"max_at", kernel_worst_where},
                         {"bound", kernel_kl_bound},
                         {"pass", kernel_pass}};
    j["gates"] = {{"mean_kl", mean_kl_pass() ? "PASS" : "FAIL"},
                  {"top1_agreement", top1_pass ? "PASS" : "FAIL"},
                  {"quantized_kernels", kernel_pass ? "PASS" : "FAIL"},
                  {"reference_check", reference_check_pass ? "PASS" : "FAIL"},
                  {"free_running", std::string(free_running_pass ? "PASS" : "FAIL") + " (reported, not gating)"},
                  {"teacher_forced_top5", std::string(teacher_forced_pass ? "PASS" : "FAIL") + " (reported, not gating)"}};
  } else {
    j["gates"] = {{"free_running", free_running_pass ? "PASS" : "FAIL"},
                  {"teacher_forced", teacher_forced_pass ? "PASS" : "FAIL"}};
    if (reference_checked) j["gates"]["reference_check"] = reference_check_pass ? "PASS" : "FAIL";
  }
  if (golden_layer_sequences > 0 && golden_layers_gating) j["gates"]["golden_layers"] = golden_layers_pass() ? "PASS" : "FAIL";
  j["summary"] = {{"mean_kl", mean_kl},
                  {"mean_kl_within_print", mean_kl_within_print},
                  {"reference_print_resolution", reference_print_resolution},
                  {"max_kl", max_kl},
                  {"top1_agreement_pct", 100.0 * top1_agreement}};
  j["failures"] = failures;
  j["warnings"] = warnings;
  nlohmann::ordered_json ps = nlohmann::ordered_json::array();
  for (const auto& p : prompts) {
    nlohmann::ordered_json e;
    e["name"] = p.name;
    e["prompt"] = p.prompt ? nlohmann::json(*p.prompt) : nlohmann::json(nullptr);
    e["prompt_ids"] = p.prompt_ids;
    e["engine_tokens"] = p.engine_tokens;
    e["reference_tokens"] = p.reference_tokens;
    e["tokenization"] = p.tokenization;
    e["reference_text"] = p.reference_text;
    const auto& f = p.free_running;
    e["free_running"] = {{"pass", f.pass},
                         {"n_engine", f.n_engine},
                         {"n_reference", f.n_reference},
                         {"first_divergence", f.first_divergence},
                         {"engine_token", f.engine_token},
                         {"reference_token", f.reference_token},
                         {"engine_top5", top_json(f.engine_top)},
                         {"reference_top5", top_json(f.reference_top)},
                         {"message", f.message}};
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : p.teacher_forced)
      steps.push_back({{"step", s.step},
                       {"reference_token", s.reference_token},
                       {"engine_top1", s.engine_top1},
                       {"top1_agree", s.top1_agree},
                       {"engine_in_reference_top5", s.engine_in_reference_top},
                       {"reference_in_engine_top5", s.reference_in_engine_top},
                       {"kl", s.kl}});
    e["teacher_forced"] = {{"top5_ok", p.teacher_forced_top5_ok},
                           {"mean_kl", p.mean_kl},
                           {"max_kl", p.max_kl},
                           {"top1_agreement_pct", 100.0 * p.top1_agreement},
                           {"steps", steps}};
    ps.push_back(e);
  }
  j["prompts"] = ps;
  return j;
}

std::string VerifyResult::to_markdown() const {
  std::string s = "# llmport verify report\n\n_Generated by llmport " + std::string(LLMPORT_VERSION) + " on " +
                  started_at + "._\n\n";
  s += "**Verdict: " + verdict_line() + "**\n\n";
  s += "| | |\n|---|---|\n";
  s += "| model | `" + model + "` |\n";
  s += "| engine runner | " + runner_kind + ", backend `" + backend + "` (" + isa + "), dtype " + dtype + " |\n";
  // kernel_configs already reads "heuristic-default" when it is; say it only beside others.
  const bool say_heuristic = heuristic_default_configs && kernel_configs.find("heuristic") == std::string::npos;
  s += "| kernel configs | " + kernel_configs + (say_heuristic ? " (heuristic defaults)" : "") + " |\n";
  s += "| reference | " + reference_kind + ": " + reference_source + " — " +
       (reference_independent ? "independent" : "**not independent** (" + independence_finding + ")") + " |\n";
  if (const CopyDirection* c = least_copy_direction(copy_directions)) {
    // The computation closest to a copy, pooled and per sequence: slope + 4 se decides.
    auto row = [](const CopyDirection& d) {
      return fmt_g(d.beta, 3) + " +- " + fmt_g(d.se, 2) + " against llmport's " + d.against + " (" +
             std::to_string(d.n) + " logits" + (d.far ? ", " + std::to_string(d.far) + " far" : std::string()) + ")";
    };
    s += "| copy direction: slope of (reference - llmport) on (fp64 - llmport) | closest to a copy, all sequences "
         "pooled: " + row(*c);
    if (const CopyDirection* q = least_copy_direction(copy_directions, false))
      s += "; one sequence (" + q->sequence + "): " + row(*q);
    s += ". An independent fp32 reference ~0.5, an fp64 one ~1, llmport output moved in its last bits ~0; a copy when "
         "slope + " + fmt_g(kCopyDirectionSigmas) + " se < " + fmt_g(kCopyDirectionBeta) + " |\n";
  }
  if (!fault.empty()) s += "| planted fault | **" + fault + "** (test only) |\n";
  s += "| prompt set | " + rendering_description(prompt_set, prompt_rendering) + ", " + std::to_string(n_prompts) + " prompts" +
       (full ? " (full)" : "") + " |\n";
  s += "| steps per prompt | " + std::to_string(n_steps) + " (EOS ignored) |\n";
  s += "| engine tokens generated | " + std::to_string(engine_tokens_generated) + " free-running, " +
       std::to_string(teacher_forced_steps) + " teacher-forced steps |\n";
  if (gate == "kld") {
    s += "| gate | KLD gate of a quantized engine (" + dtype + "): mean KL per step <= " + fmt_g(kl_bound) + " (" +
         kl_kind_name(kl_kind) + full_steps_note(*this) + ") and top-1 agreement >= " + fmt_g(100.0 * min_top1, 4) + "% |\n";
    s += "| predicted cost of " + dtype + " rounding on this model (not independent) | mean KL " +
         fmt_g(predicted_mean_kl) + " (random errors of its step " + fmt_g(predicted_noise_kl) +
         ", llmport's quantizer " + fmt_g(predicted_quantizer_kl) + "), top-1 kept at " +
         fmt_g(100.0 * predicted_top1, 4) + "% of steps: default bounds " +
         fmt_g(default_kl_bound) + " and " + fmt_g(100.0 * default_min_top1, 4) + "% (the " + dtype +
         " bounds, widened to " + fmt_g(kQuantCostKlFactor) + "x the predicted KL and " + fmt_g(kQuantCostTop1Factor) +
         "x its top-1 disagreement where that is wider) |\n";
    s += "| mean KL gate | " + std::string(mean_kl_pass() ? "PASS" : "FAIL") + " |\n";
    s += "| top-1 agreement gate | " + std::string(top1_pass ? "PASS" : "FAIL") + " |\n";
    s += "| quantized kernels (fp32 activations) vs the fp32 oracle holding the same " + dtype +
         " weights (not independent) | " +
         std::string(kernel_pass ? "PASS" : "FAIL") + ": mean KL " + fmt_g(kernel_mean_kl) + " (max " +
         fmt_g(kernel_max_kl) + "), bound " + fmt_g(kernel_kl_bound) + " |\n";
    s += "| free-running / teacher-forced top-" + std::to_string(top_k) + " | " +
         (free_running_pass ? "PASS" : "FAIL") + " / " + (teacher_forced_pass ? "PASS" : "FAIL") +
         " (reported, not gating) |\n";
  } else {
    s += "| tolerances | top-" + std::to_string(top_k) + " inclusion both ways; mean KL per step <= " +
         fmt_g(kl_bound) + " (" + kl_kind_name(kl_kind) + full_steps_note(*this) + ") |\n";
    s += "| free-running gate | " + std::string(free_running_pass ? "PASS" : "FAIL") + " |\n";
    s += "| teacher-forced gate | " + std::string(teacher_forced_pass ? "PASS" : "FAIL") + " |\n";
  }
  if (reference_checked)
    s += "| the reference vs llmport's " + reference_check_dtype + " computation (not independent) | " +
         std::string(reference_check_pass ? "PASS" : "FAIL") + ": mean KL " + fmt_g(reference_check_mean_kl) +
         (reference_check_mean_kl < 0.99 * reference_check_mean_kl_printed
              ? " within the reference's printed digits (" + fmt_g(reference_check_mean_kl_printed) +
                    " at its values as printed)"
              : std::string()) +
         ", bound " + fmt_g(reference_check_bound) + " |\n";
  if (golden_layer_sequences == 0 && !golden_layers_unrecorded.empty())
    s += "| every layer vs the golden's hidden states | not checked" +
         verify_detail::unrecorded_phrase(golden_layers_unrecorded, golden_layer_sequences) + " |\n";
  else if (golden_layer_sequences > 0)
    s += "| every layer vs the golden's hidden states (" +
         std::string(golden_layers_gating ? "the engine" : "llmport's fp32 oracle, not gating: the engine does not compute in fp32") +
         ") | " + (golden_layers_departs.empty() ? "PASS" : golden_layers_gating ? "FAIL" : "departs") + ": " +
         std::to_string(golden_layer_sequences) + " sequence" + (golden_layer_sequences == 1 ? "" : "s") +
         (golden_layers_departs.empty() ? " agree" : "; " + golden_layers_departs) +
         verify_detail::unrecorded_phrase(golden_layers_unrecorded, golden_layer_sequences) + " |\n";
  s += "| mean / max KL | " + fmt_g(mean_kl) + " / " + fmt_g(max_kl) + " |\n";
  // Shown where the reference's printed digits move the mean KL by more than 1% of it.
  if (mean_kl_within_print < 0.99 * mean_kl)
    s += "| mean KL within the reference's printed digits (log-probabilities +-" + fmt_g(reference_print_resolution, 2) +
         " nats; the gate's value) | " + fmt_g(mean_kl_within_print) + " |\n";
  s += "| top-1 agreement | " + fmt_g(100.0 * top1_agreement, 4) + "% |\n";
  s += "| wall time | " + fmt_g(wall_s, 3) + " s |\n\n";
  if (!failures.empty()) {
    s += "## Failures\n\n";
    for (const auto& f : failures) s += "- " + f + "\n";
    s += "\n";
  }
  if (!caps.empty()) {
    s += "## Verdict capped at PASS-with-warnings\n\n";
    for (const auto& c : caps) s += "- " + c + "\n";
    s += "\n";
  }
  if (!warnings.empty()) {
    s += "## Warnings\n\n";
    for (const auto& w : warnings) s += "- " + w + "\n";
    s += "\n";
  }
  s += "## Prompts\n\n| prompt | ids | free-running | first divergence | top-5 (TF) | top-1 agree | mean KL | max KL |\n";
  s += "|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : prompts)
    s += "| " + p.name + " | " + std::to_string(p.prompt_ids.size()) + " | " + (p.free_running.pass ? "PASS" : "FAIL") +
         " | " + (p.free_running.first_divergence >= 0 ? std::to_string(p.free_running.first_divergence) : "-") +
         " | " + (p.teacher_forced_top5_ok ? "ok" : "FAIL") + " | " + fmt_g(100.0 * p.top1_agreement, 4) + "% | " +
         fmt_g(p.mean_kl) + " | " + fmt_g(p.max_kl) + " |\n";
  s += "\n## Dispatch counters (engine runner)\n\n| kernel | calls |\n|---|---|\n";
  for (const auto& [k, v] : dispatch_counters) s += "| " + k + " | " + std::to_string(v) + " |\n";
  return s;
}

void write_verify_report(const fs::path& dir, const VerifyResult& r) {
  // Both paths checked before either is written; each written to a temporary name and
  // renamed (an interrupted run leaves no half report).
  for (const char* name : {"report.json", "report.md"}) check_output_path(dir / name);
  write_output_file(dir / "report.json", r.to_json().dump(1) + "\n");
  write_output_file(dir / "report.md", r.to_markdown());
}

fs::path default_report_dir() {
  const fs::path cwd = fs::current_path();
  const fs::path base = fs::exists(cwd / "deployment.json") ? cwd / "verify" / "reports" : cwd / "llmport-reports";
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  // Claimed by creating it: two runs started in the same second (a check of exists() then a
  // later create) both chose one directory and the second failed at its report write after
  // the whole run.
  fs::create_directories(base);
  fs::path p = base / buf;
  for (int i = 2; !fs::create_directory(p); ++i) p = base / (std::string(buf) + "-" + std::to_string(i));
  return p;
}

}  // namespace llmport
