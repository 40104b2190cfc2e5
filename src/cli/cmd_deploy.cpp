// `llmport deploy MODEL ...`: the phased deployment pipeline, and the hidden
// `llmport evaluate DIR` that phase 7 runs in a fresh process.
#include <poll.h>
#include <unistd.h>

#include <iostream>
#include <sstream>

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "llmport/data_dir.hpp"
#include "llmport/deploy.hpp"
#include "llmport/error.hpp"
#include "llmport/hub.hpp"

namespace llmport::cli {
namespace {

// Whether a question can get an answer: a terminal, or stdin already holding input/EOF
// (a pipe or file). An idle inherited pipe must not hang the run.
bool stdin_answerable() {
  if (::isatty(0)) return true;
  pollfd p{0, POLLIN, 0};
  return ::poll(&p, 1, 200) > 0 && (p.revents & (POLLIN | POLLHUP));
}

Registrar deploy_cmd{Command{
    "deploy", "bring a model up on a target through gated phases 0-7 into a deployment workspace",
    [](CLI::App& sub) -> std::function<int()> {
      struct Opts {
        std::string model, reference = "oracle", prompts;
        deploy::DeployOptions d;
        int from_phase = -1;
        std::string workspace = "deployments";
        std::optional<double> kl_bound, min_top1;
      };
      auto o = std::make_shared<Opts>();
      add_model_arg(sub, &o->model);
      sub.add_option("--name", o->d.name, "deployment name (default: the model's name, lower-cased, / -> _)");
      sub.add_option("--target", o->d.target, "compute target: cpu (the only target built into this binary; cuda and npu1/npu2 are not)")
          ->default_val("cpu");
      sub.add_option("--dtype", o->d.dtype,
                     "bf16|fp16|fp32, or q8_0|q4_0 weight-only quantization judged by the KLD gate (default: the "
                     "checkpoint's torch_dtype)");
      sub.add_option("--quantize-lm-head", o->d.quantize_lm_head, "q8_0 | q4_0: quantize lm_head too (quantized --dtype only)");
      sub.add_option("--kl-bound", o->kl_bound,
                     "quantized dtypes: the KLD gate's bound on mean KL per step (default q8_0 2e-3, q4_0 0.15, widened to "
                     "2x the predicted cost of the rounding on the model where that is more)");
      sub.add_option("--min-top1", o->min_top1,
                     "quantized dtypes: the KLD gate's least share (0..1] of steps whose top-1 agrees (default q8_0 "
                     "0.97, q4_0 0.78, lowered to allow 3x the predicted disagreement, not below 0.25)");
      sub.add_option("--workspace", o->workspace, "directory holding deployments")->default_val("deployments");
      CLI::Option* reference_opt = sub.add_option("--reference", o->reference,
                                                  "golden:FILE | hf | numpy | oracle (a resume: as deployed)")
                                       ->default_val("oracle");
      sub.add_option("--prompts", o->prompts, "prompt file for verify and the deployment's checks");
      CLI::Option* from_opt =
          sub.add_option("--from-phase", o->from_phase, "resume at phase N (every earlier phase must have passed)")
              ->check(in_range(0, deploy::kNumPhases - 1));
      // Two answers to "where does it resume" (the first unpassed phase, or N): one only.
      sub.add_flag("--resume", o->d.resume, "resume an existing deployment at its first unpassed phase")
          ->excludes(from_opt);
      sub.add_flag("--interactive", o->d.interactive, "ask before advancing past each PASS");
      sub.add_option("--max-seq", o->d.max_seq, "cap the context (tokens); a sliding window >= N is then accepted")
          ->check(at_least(1));
      CLI::Option* threads_opt =
          sub.add_option("--threads", o->d.threads, "worker threads (0 = all cores; a resumed deployment: "
                                                     "as deployed)")->check(thread_count());
      // Test-only options (hidden): a planted engine fault, short timing runs, early stop.
      sub.add_option("--inject-fault", o->d.fault, "test only: plant a fault kind[@layer][=value] in the engine")->group("");
      sub.add_flag("--quick", o->d.quick, "")->group("");
      sub.add_option("--last-phase", o->d.last_phase, "")->group("")->check(in_range(0, deploy::kNumPhases - 1));
      return [o, threads_opt, reference_opt]() {
        if (o->model.empty()) throw UsageError("MODEL is required (a model directory or org/name id)");
        o->d.threads_given = threads_opt->count() > 0;
        o->d.reference_given = reference_opt->count() > 0;
        // The workspace receives the deployment's registry entries: never the shipped data.
        check_not_in_data_dir(o->workspace, "--workspace");
        // Before the model resolves: an HF id may download gigabytes a bad --name then wastes.
        if (!o->d.name.empty()) deploy::check_deployment_name(o->d.name);
        auto r = resolve_model(o->model);
        o->d.model = o->model;
        o->d.model_dir = r.dir;
        o->d.repo_id = r.repo_id;
        o->d.revision = r.revision;
        o->d.commit = r.commit;
        o->d.reference = o->reference;
        o->d.prompts = o->prompts;
        o->d.workspace = o->workspace;
        if (o->from_phase >= 0) o->d.from_phase = o->from_phase;
        o->d.kl_bound = o->kl_bound;
        o->d.min_top1 = o->min_top1;
        std::istringstream none;
        std::istream& in = stdin_answerable() ? std::cin : static_cast<std::istream&>(none);
        return deploy::run_deploy(o->d, in, std::cout);
      };
    }}};

Registrar evaluate_cmd{Command{
    "evaluate", "", [](CLI::App& sub) -> std::function<int()> {
      sub.group("");  // hidden: phase 7 of deploy runs it in a fresh process
      auto dir = std::make_shared<std::string>();
      sub.add_option("DIR", *dir, "deployment directory")->required();
      return [dir]() { return deploy::evaluate_deployment(*dir, std::cout); };
    }}};

}  // namespace
}  // namespace llmport::cli
