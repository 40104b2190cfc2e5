// Phase 7's independent evaluation (`llmport evaluate DIR`, a fresh process): reads only
// the deployment, audits how its gate is configured and what the model files are, clears
// the kernel cache, re-runs verify --full with the deployment's tuned kernels and audits
// the run itself (runner, backend, dispatch counts, token counts, tolerances).
#include <fmt/format.h>

#include <iostream>
#include <sstream>
#include <numeric>

#include "deploy/audit.hpp"
#include "deploy/prompts.hpp"
#include "deploy/evaluation_report.hpp"
#include "deploy/generated_file.hpp"
#include "deploy/kernel_tuning.hpp"
#include "deploy/manifest.hpp"
#include "deploy/util.hpp"
#include "deploy/verify_step.hpp"
#include "deploy/workspace.hpp"
#include "llmport/error.hpp"
#include "llmport/kernels.hpp"
#include "llmport/records.hpp"
#include "llmport/registry.hpp"
#include "llmport/verify.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

namespace {

uint64_t total_calls(const std::map<std::string, uint64_t>& c) {
  return std::accumulate(c.begin(), c.end(), uint64_t{0}, [](uint64_t s, const auto& kv) { return s + kv.second; });
}

// Kernel calls one forward pass of this engine makes (measured on the engine itself, so
// the audit holds for any architecture): the sum over kernels of a 1-token forward.
uint64_t calls_per_forward(const ModelConfig& cfg, const WeightStore& w, const EngineOptions& opt) {
  EngineOptions o = opt;
  o.max_seq = 2;
  Engine e(cfg, w, o);
  e.backend().reset_counters();
  int id = 0;
  e.prefill(std::span<const int>(&id, 1));
  return total_calls(e.backend().counters().calls);
}

// Prompts x steps the re-run must cover, from the deployment's own inputs.
ExpectedDepth expected_depth(const Manifest& m) {
  if (m.reference.kind == "golden") {
    RecordFile rf = read_record_file(m.reference.file);
    return {static_cast<int>(rf.sequences.size()), rf.n_steps};
  }
  if (!m.prompts_file.empty()) return {static_cast<int>(read_prompt_file(m.prompts_file).size()), kDefaultSteps};
  return {-1, kDefaultSteps};  // a built-in set: all of it
}

void add_model_rows(const Manifest& m, std::vector<AuditItem>& a) {
  for (auto& r : audit_phases(m)) a.push_back(std::move(r));
  a.push_back(audit_target(m, available_backends()));
  a.push_back(audit_model_files(m, m.model_dir));
  a.push_back(audit_golden_file(m));
}

// Phase 3 held the engine on the default kernel configs to the golden's hidden states;
// the tuned configs the deployment runs on are held to them here.
void add_golden_layers_row(const Manifest& m, const ModelConfig& cfg, const WeightStore& w, const EngineOptions& eo,
                           std::vector<AuditItem>& a) {
  const auto golden = golden_records(m.reference);
  if (!golden || std::none_of(golden->sequences.begin(), golden->sequences.end(),
                              [](const RecordSequence& s) { return s.hidden.has_layers(); }))
    return;
  try {
    EngineRunner engine(cfg, w, eo);
    a.push_back(audit_golden_layers(
        verify_detail::compare_target_golden_layers(golden, engine, eo.quant != QuantType::None, cfg, w, m.threads)));
  } catch (const std::exception& e) {
    a.push_back({kGoldenLayersCheck, "FAIL", e.what()});
  }
}

void add_rerun_rows(const Manifest& m, const VerifyResult& r, const EngineOptions& eo, bool cache_cleared,
                    std::vector<AuditItem>& a) {
  a.push_back(audit_rerun(r));
  a.push_back(audit_reference_independence(r));
  try {
    a.push_back(audit_reference_depth(r, expected_depth(m)));
  } catch (const std::exception& e) {
    a.push_back({"reference depth", "FAIL", e.what()});
  }
  if (parse_quant(m.dtype) != QuantType::None) a.push_back(audit_kld_gate(r, m));
  else a.push_back(audit_tolerances(r, parse_dtype(m.dtype)));
  a.push_back(audit_engine(m, r));
  a.push_back(audit_dispatch(r));
  a.push_back(audit_tuned_configs(m, r, *eo.kernels));
  a.push_back(audit_kernel_cache(cache_cleared, *eo.kernels));
  std::optional<ModelConfig> cfg;
  std::optional<WeightStore> w;
  try {
    cfg = load_model_config(m.model_dir, m.max_seq > 0 ? std::optional<int>(m.max_seq) : std::nullopt);
    w = WeightStore::open(m.model_dir, *cfg);
    a.push_back(audit_counts(r, calls_per_forward(*cfg, *w, eo)));
  } catch (const std::exception& e) {
    a.push_back({"token, forward and dispatch counts equal what the prompt set requires", "FAIL", e.what()});
  }
  if (w) add_golden_layers_row(m, *cfg, *w, eo, a);
  a.push_back(audit_fault(m, r));
}

std::string rerun_markdown(const Manifest& m, const VerifyResult& r, const Workspace& ws, const fs::path& dir) {
  std::error_code ec;
  std::ostringstream rr;
  rr << "`verify` with the deployment's engine (" << r.backend << "/" << r.dtype << ", " << r.kernel_configs
     << ") against `" << m.reference.to_arg() << "`, from a cleared kernel cache:\n\n"
     << "- result: **" << r.verdict_line() << "**\n"
     << fmt::format("- prompts: {} ({}), steps: {}\n", r.n_prompts, r.prompt_set, r.n_steps)
     << (r.gate == "kld"
             ? fmt::format("- {} KLD gate: mean KL {}, top-1 agreement {} (bound {:.1f}%); free-running {} and "
                           "teacher-forced top-{} {} (reported, not gating)\n",
                           r.dtype, r.mean_kl_pass() ? "PASS" : "FAIL", r.top1_pass ? "PASS" : "FAIL",
                           100.0 * r.min_top1, r.free_running_pass ? "PASS" : "FAIL", r.top_k,
                           r.teacher_forced_pass ? "PASS" : "FAIL")
             : fmt::format("- free-running: {}; teacher-forced: {}\n", r.free_running_pass ? "PASS" : "FAIL",
                           r.teacher_forced_pass ? "PASS" : "FAIL"))
     << fmt::format("- mean KL per step {:.4g} (bound {:.4g}), max {:.4g}; top-1 agreement {:.2f}%{}\n", r.mean_kl,
                    r.kl_bound, r.max_kl, 100.0 * r.top1_agreement,
                    r.gate == "kld" ? fmt::format(" (bound {:.1f}%)", 100.0 * r.min_top1) : std::string())
     << (r.gate == "kld"
             ? fmt::format("- predicted cost of {} rounding on this model (the smaller of random errors of the "
                           "format's step and llmport's quantizer, each against the same computation unrounded, "
                           "on its own greedy path; llmport's own, not independent: it sets the bounds): mean KL "
                           "{:.4g}, top-1 kept at {:.2f}% of steps\n",
                           r.dtype, r.predicted_mean_kl, 100.0 * r.predicted_top1)
             : std::string())
     << (r.reference_checked
             ? fmt::format("- the reference vs llmport's {} computation (not independent: it can fail a run, never "
                           "raise one): mean KL {:.4g} (bound {:.4g}): {}\n",
                           r.reference_check_dtype, r.reference_check_mean_kl, r.reference_check_bound,
                           r.reference_check_pass ? "PASS" : "FAIL")
             : std::string())
     << "- report: " << fs::relative(dir, ws.dir(), ec).string() << "/report.md\n";
  for (const auto& f : r.failures) rr << "- failure: " << f << "\n";
  for (const auto& c : r.caps) rr << "- capped: " << c << "\n";
  return rr.str();
}

}  // namespace

int evaluate_deployment(const fs::path& deployment_dir, std::ostream& out) {
  Workspace ws(fs::weakly_canonical(fs::absolute(deployment_dir)));
  if (!ws.is_deployment()) throw UsageError(deployment_dir.string() + ": not a deployment (no deployment.json)");
  Manifest m = Manifest::load(ws.manifest());
  EvaluationReport rep;
  rep.name = m.name;
  rep.generated_at = now_iso();
  // ---- the deployment as recorded, before re-running its gate
  add_model_rows(m, rep.audit);

  // ---- re-run verify from a cleared kernel cache
  std::error_code ec;
  // Phase 7 has already moved a user's files out of the cache (on the user's console);
  // `llmport evaluate` run by hand does it here.
  set_aside_user_files_in_kernel_cache(ws.kernel_cache(), std::cerr);
  fs::remove_all(ws.kernel_cache(), ec);
  const bool cleared = !fs::exists(ws.kernel_cache());
  EngineOptions eo = stage_engine_options(m, ws.dir(), ConfigStage::Tuned, m.threads);
  fs::path dir = fresh_dir(ws.verify_reports(), "evaluation");
  fs::remove(dir);
  VerifyOptions vo = deployment_verify_options(m, eo, dir);
  vo.kernel_configs = stage_label(ws.dir(), ConfigStage::Tuned);
  vo.log = [&](const std::string& l) { out << l << "\n"; };
  std::optional<VerifyResult> vr;
  try {
    vr = run_verify(m.model_dir, vo);
  } catch (const std::exception& e) {
    rep.audit.push_back({"verify re-run passes", "FAIL", std::string("could not run: ") + e.what()});
  }
  if (vr) {
    add_rerun_rows(m, *vr, eo, cleared, rep.audit);
    rep.rerun_markdown = rerun_markdown(m, *vr, ws, dir);
  } else {
    rep.rerun_markdown = "The re-run did not complete (see the audit).\n";
  }
  rep.verdict = EvaluationReport::verdict_of(rep.audit);
  rep.reproduce = {fmt::format("cd {}", ws.dir().string()), "make verify-full",
                   fmt::format("llmport evaluate {}", ws.dir().string())};
  write_generated(ws, ws.evaluation_report(), rep.to_markdown());
  out << "evaluation " << m.name << ": Verdict: " << rep.verdict << " (" << ws.evaluation_report().string() << ")\n";
  return rep.verdict == "FAIL" ? kExitCheckFailed : kExitOk;
}

}  // namespace llmport::deploy
