// `llmport verify MODEL`: the correctness gate (free-running + teacher-forced) against a
// golden file, the oracle, or transformers; exit 0 PASS, 1 FAIL, 2 bad input.
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/engine_flags.hpp"
#include "cli/option_checks.hpp"
#include "llmport/file_io.hpp"
#include "llmport/deploy.hpp"
#include "llmport/dtype.hpp"
#include "llmport/error.hpp"
#include "llmport/model_config.hpp"
#include "llmport/verify.hpp"

namespace llmport::cli {
namespace {

struct VerifyArgs {
  std::string model;
  std::string reference = "oracle";
  bool full = false;   // accepted for old scripts: every prompt runs by default now
  bool quick = false;
  std::string dtype;
  std::string quantize_lm_head;
  std::optional<double> kl_bound;  // overrides the dtype's default bound
  std::optional<double> min_top1;  // quantized dtypes: overrides the default top-1 share
  std::string backend = "cpu";
  std::string report_dir;
  std::string prompts;
  std::string fault;
  std::string deployment;      // deployment directory whose recorded weight hashes MODEL must match
  std::string kernel_configs;  // report label; default from --registry
  std::string registry;        // writable kernel registry looked up first (tuned configs)
  int max_seq = 0;             // context cap (accepts a sliding window <= the cap)
  int threads = 0;
};

// Runs verify into `report_dir`, which run_verify creates before the run. A run that then
// fails with bad input leaves no empty directory of its own behind (`ours`: claimed here or
// absent before; remove() keeps a non-empty one); a directory that was there is left alone.
VerifyResult run_verify_into(const std::string& model, VerifyOptions& opt, std::filesystem::path report_dir,
                             bool ours) {
  opt.report_dir = std::move(report_dir);
  try {
    return run_verify(model, opt);
  } catch (...) {
    std::error_code ec;
    if (ours) std::filesystem::remove(opt.report_dir, ec);
    throw;
  }
}

int run_verify_cmd(const VerifyArgs& a) {
  // --quick shortens a built-in prompt set; a golden (or --prompts file) runs every sequence
  // it holds, so the flag would be silently ignored there.
  if (a.quick && (a.reference.rfind("golden:", 0) == 0 || !a.prompts.empty()))
    throw UsageError("--quick shortens a built-in prompt set (oracle, hf or numpy reference without --prompts); " +
                     std::string(a.prompts.empty() ? "a golden reference" : "a --prompts file") +
                     " runs every sequence it holds");
  const std::string dir = resolve_model_dir(a.model);
  // A deployment's `make verify` names the deployment: its gate passing on weights other than
  // the deployed ones (a tensor rescaled since) would say nothing about it, so those FAIL first.
  if (!a.deployment.empty()) {
    const std::string changed = deploy::check_deployed_weights(a.deployment, dir);
    if (!changed.empty()) {
      std::cout << "FAIL: " << changed << "\nFAIL" << std::endl;
      return kExitCheckFailed;
    }
  }
  VerifyOptions opt;
  opt.reference = a.reference;
  opt.quick = a.quick;
  opt.kl_bound = a.kl_bound;
  opt.min_top1 = a.min_top1;
  opt.engine = engine_options_from_flags({a.backend, a.threads, dtype_flag(a.dtype), a.registry, a.fault, a.quantize_lm_head},
                                         [&] { return model_context(load_model_config(dir, context_cap(a.max_seq))); });
  if (!a.prompts.empty()) opt.prompts_file = a.prompts;
  opt.max_seq = a.max_seq;
  opt.kernel_configs = !a.kernel_configs.empty() ? a.kernel_configs
                       : a.registry.empty()      ? std::string("heuristic-default")
                                                 : "tuned:" + a.registry;
  opt.log = [](const std::string& s) { std::cout << s << std::endl; };
  const bool claimed = a.report_dir.empty();  // default_report_dir() creates it
  const std::filesystem::path report_dir = claimed ? default_report_dir() : std::filesystem::path(a.report_dir);
  const VerifyResult r = run_verify_into(dir, opt, report_dir, claimed || !std::filesystem::exists(report_dir));
  if (!r.pass) {
    for (const auto& f : r.failures) std::cout << "FAIL: " << f << "\n";
  }
  for (const auto& w : r.warnings) std::cout << "warning: " << printable(w) << "\n";
  std::cout << "report: " << (r.report_dir / "report.md").string() << "\n";
  // The verdict line says what was proved: a capped run never prints a bare PASS.
  std::cout << r.verdict_line() << std::endl;
  return r.pass ? kExitOk : kExitCheckFailed;
}

Registrar reg{Command{
    "verify",
    "Verify the engine against a reference: PASS needs an independent one (golden:FILE, hf or numpy); the default "
    "oracle caps the verdict at PASS-with-warnings",
    [](CLI::App& sub) -> std::function<int()> {
      sub.footer(
          "references:\n"
          "  golden:FILE  records produced outside llmport (the shared goldens, tools/hf_reference.py output);\n"
          "               independent unless the file names llmport as producer, says \"independent\": false,\n"
          "               names no producer, or its logits equal llmport's own output bit for bit\n"
          "  hf           runs tools/hf_reference.py (python3 + torch + transformers): independent\n"
          "  numpy        runs tools/numpy_reference.py (python3 + numpy: a numpy float64 forward of the\n"
          "               Llama/Mistral/Qwen2/Qwen3 families, fed llmport's prompt ids): independent\n"
          "  oracle       llmport's own fp32 reference kernels: NOT independent, verdict at most\n"
          "               PASS-with-warnings (reference not independent: oracle)\n"
          "A plain PASS also needs >= 4 prompts x 24 steps (oracle/hf/numpy: the built-in 8 x 32).\n"
          "exit codes: 0 PASS or PASS-with-warnings (the last line says which and why), 1 FAIL (a check "
          "failed), 2 bad input (missing model/reference/prompts, bad flag), 3 architecture rejected");
      auto a = std::make_shared<VerifyArgs>();
      add_model_arg(sub, &a->model);
      sub.add_option("--reference", a->reference,
                     "golden:FILE (independent file) | hf (transformers, independent) | numpy (numpy forward, "
                     "independent) | oracle (llmport's fp32 "
                     "kernels, not independent)")
          ->capture_default_str();
      auto* full = sub.add_flag("--full", a->full, "every prompt of the set (the default; kept for old scripts)");
      // The two depths exclude each other (CLI11 excludes; error_wording.hpp words it).
      sub.add_flag("--quick", a->quick,
                   "only 2 prompts of a built-in set (a smoke test: the verdict is capped at PASS-with-warnings)")
          ->excludes(full);
      sub.add_option("--dtype", a->dtype,
                     "engine compute dtype: bf16|fp16|fp32, or q8_0|q4_0 weight-only quantization judged by the KLD "
                     "gate (default: checkpoint dtype)");
      sub.add_option("--quantize-lm-head", a->quantize_lm_head, "q8_0 | q4_0: quantize lm_head too (needs a quantized --dtype)");
      sub.add_option("--kl-bound", a->kl_bound,
                     "bound on the mean KL per step (default: the dtype's: bf16 2.5e-3, fp32 2e-6, q8_0 2e-3, q4_0 0.15; a "
                     "quantized dtype's widened to 2x the predicted cost of its rounding on the model where that is "
                     "more)");
      sub.add_option("--min-top1", a->min_top1,
                     "q8_0|q4_0 only: least share (0..1] of steps whose top-1 agrees (default q8_0 0.97, q4_0 0.78, "
                     "lowered to allow 3x the predicted disagreement of its rounding on the model, not below 0.25)");
      sub.add_option("--backend", a->backend, "engine backend (cpu, reference, ...)")->capture_default_str();
      sub.add_option("--threads", a->threads, "engine threads (0 = all cores)")->check(thread_count());
      sub.add_option("--report-dir", a->report_dir,
                     "report directory (default ./llmport-reports/<time>/, or verify/reports/<time>/ in a deployment)");
      sub.add_option("--prompts", a->prompts, "prompt file (JSON: texts or prompt_ids) instead of the built-in set");
      sub.add_option("--registry", a->registry,
                     "kernel registry directory looked up before the shipped one (a deployment's registry/)");
      sub.add_option("--max-seq", a->max_seq, "cap the context (tokens)")->check(at_least(1));
      sub.add_option("--deployment", a->deployment,
                     "deployment directory (make verify passes it): FAIL unless MODEL's files still hash as its "
                     "deployment.json records");
      sub.add_option("--kernel-configs", a->kernel_configs, "where the engine's tile configs came from (for the report)")
          ->group("");
      sub.add_option("--inject-fault", a->fault, "test only: plant a fault kind[@layer][=value] in the engine")
          ->group("");
      return [a] {
        if (a->model.empty()) throw UsageError("verify: MODEL is required");
        return run_verify_cmd(*a);
      };
    }}};

}  // namespace
}  // namespace llmport::cli
