#include "deploy/verify_step.hpp"

#include <fmt/format.h>

#include "deploy/audit.hpp"
#include "deploy/kernel_tuning.hpp"
#include "deploy/util.hpp"
#include "llmport/error.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

fs::path fresh_dir(const fs::path& parent, const std::string& stem) {
  fs::path base = parent / (stem + "-" + now_compact());
  fs::path d = base;
  for (int i = 1; fs::exists(d); ++i) d = base.string() + "-" + std::to_string(i);
  fs::create_directories(d);
  return d;
}

VerifyOptions deployment_verify_options(const Manifest& m, const EngineOptions& engine,
                                        const fs::path& report_dir) {
  VerifyOptions v;
  v.engine = engine;
  v.reference = m.reference.to_arg();
  v.top_k = m.verify_top_k;
  if (m.verify_kl_bound > 0) v.kl_bound = m.verify_kl_bound;
  if (m.verify_min_top1 > 0) v.min_top1 = m.verify_min_top1;
  v.max_seq = m.max_seq;
  if (!m.prompts_file.empty()) v.prompts_file = m.prompts_file;
  v.report_dir = report_dir;
  v.golden_layers = false;  // phases 2, 3 and 7 hold them, a damaged record BLOCKED there
  return v;
}

VerifyResult run_deployment_verify(Context& ctx, ConfigStage stage, const std::string& stem) {
  // Every phase judges the golden the deployment recorded: one replaced between phases
  // (an --interactive pause) would give phases 4-5 another verdict than phase 3's.
  if (const AuditItem g = audit_golden_file(ctx.m); g.result == "FAIL") throw UsageError(g.detail);
  fs::path dir = fresh_dir(ctx.ws.verify_reports(), stem);
  fs::remove(dir);  // verify creates it and refuses to overwrite an existing report
  VerifyOptions v = deployment_verify_options(ctx.m, ctx.target_engine_options(stage), dir);
  v.kernel_configs = stage_label(ctx.ws.dir(), stage);
  v.log = [&](const std::string& line) { ctx.log << "  " << line << "\n"; };
  Stopwatch sw;
  VerifyResult r = run_verify(ctx.m.model_dir, v);
  ctx.runtime_s += sw.seconds();
  return r;
}

PhaseStatus verify_status(const VerifyResult& r) {
  if (!r.pass) return PhaseStatus::Fail;
  return r.caps.empty() ? PhaseStatus::Pass : PhaseStatus::PassWithWarnings;
}

nlohmann::json verify_numbers(const VerifyResult& r, const fs::path& deployment_dir) {
  nlohmann::json j = {{"pass", r.pass},
                      {"verdict", r.verdict()},
                      {"caps", r.caps},
                      {"independence_finding", r.independence_finding},
                      {"free_running_pass", r.free_running_pass},
                      {"teacher_forced_pass", r.teacher_forced_pass},
                      {"n_prompts", r.n_prompts},
                      {"n_steps", r.n_steps},
                      {"prompt_set", r.prompt_set},
                      {"mean_kl", r.mean_kl},
                      {"max_kl", r.max_kl},
                      {"kl_bound", r.kl_bound},
                      {"gate", r.gate},
                      {"top1_agreement", r.top1_agreement},
                      {"backend", r.backend},
                      {"isa", r.isa},
                      {"dtype", r.dtype},
                      {"kernel_configs", r.kernel_configs},
                      {"reference", r.reference_kind},
                      {"reference_independent", r.reference_independent}};
  if (r.gate == "kld") {
    j["min_top1"] = r.min_top1;
    j["predicted_mean_kl"] = r.predicted_mean_kl;
    j["predicted_top1"] = r.predicted_top1;
  }
  if (!r.report_dir.empty()) {
    std::error_code ec;
    auto rel = fs::relative(r.report_dir, deployment_dir, ec);
    j["report_dir"] = ec ? r.report_dir.string() : rel.string();
  }
  if (!r.failures.empty()) j["first_failure"] = r.failures.front();
  return j;
}

std::string verify_summary(const VerifyResult& r) {
  std::string s = fmt::format("{}: {} prompts x {} steps, {}mean KL {:.3g} (bound {:.3g}), max KL {:.3g}, top-1 agreement {:.1f}%",
                              r.verdict_line(), r.n_prompts, r.n_steps, r.gate == "kld" ? r.dtype + " KLD gate: " : "",
                              r.mean_kl, r.kl_bound, r.max_kl, 100.0 * r.top1_agreement);
  if (r.gate == "kld")
    s += fmt::format(" (bound {:.1f}%; bounds from the predicted cost of {} rounding here: mean KL {:.3g}, top-1 kept {:.1f}%)",
                     100.0 * r.min_top1, r.dtype, r.predicted_mean_kl, 100.0 * r.predicted_top1);
  if (!r.pass && !r.failures.empty()) s += "; " + r.failures.front();
  return s;
}

}  // namespace llmport::deploy
