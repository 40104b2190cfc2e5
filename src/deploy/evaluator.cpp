// Phase 7's independent evaluation (`llmport evaluate DIR`, a fresh process): reads only
// the deployment, audits how its gate is configured and what the model files are, clears
// the kernel cache, re-runs verify --full with the deployment's tuned kernels and audits
// the run itself (runner, backend, dispatch counts, token counts, tolerances).
#include <fmt/format.h>

#include <iostream>
#include <numeric>

#include "deploy/evaluation_report.hpp"
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

using Audit = std::vector<AuditItem>;

void add(Audit& a, std::string check, bool ok, std::string detail, bool warn_only = false) {
  a.push_back({std::move(check), ok ? "ok" : (warn_only ? "warning" : "FAIL"), std::move(detail)});
}

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

// Prompt count and steps the run must have done with default settings.
std::pair<int, int> expected_counts(const Manifest& m) {
  if (m.reference.kind == "golden") {
    RecordFile rf = read_record_file(m.reference.file);
    return {static_cast<int>(rf.sequences.size()), rf.n_steps};
  }
  if (!m.prompts_file.empty())
    return {static_cast<int>(read_prompt_file(m.prompts_file).size()), kDefaultSteps};
  return {-1, kDefaultSteps};  // a built-in set: verify --full runs all of it
}

}  // namespace

int evaluate_deployment(const fs::path& deployment_dir, std::ostream& out) {
  Workspace ws(fs::weakly_canonical(fs::absolute(deployment_dir)));
  if (!ws.is_deployment()) throw UsageError(deployment_dir.string() + ": not a deployment (no deployment.json)");
  Manifest m = Manifest::load(ws.manifest());
  EvaluationReport rep;
  rep.name = m.name;
  rep.generated_at = now_iso();
  Audit& a = rep.audit;

  // ---- the gate as configured, before re-running it
  for (int i = 0; i < 7; ++i) {
    const auto& p = m.phases[static_cast<std::size_t>(i)];
    bool ok = p.status == PhaseStatus::Pass || (p.status == PhaseStatus::PassWithWarnings && (i == 4 || i == 5 || i == 0));
    add(a, fmt::format("phase {} ({}) recorded", i, phase_name(i)), ok, std::string(status_name(p.status)));
  }
  auto backends = available_backends();
  bool target_ok = m.target != "reference" && std::find(backends.begin(), backends.end(), m.target) != backends.end();
  add(a, "engine backend is the deployment's target", target_ok,
      target_ok ? "target " + m.target + ", never the reference kernels" : "target '" + m.target + "' not usable");
  std::map<std::string, std::string> now;
  try {
    now = hash_model_files(m.model_dir);
  } catch (const std::exception& e) {
    add(a, "weight hashes match the manifest", false, e.what());
  }
  if (!now.empty()) {
    std::vector<std::string> diff;
    for (const auto& [f, h] : m.file_hashes)
      if (!now.count(f) || now[f] != h) diff.push_back(f);
    for (const auto& [f, h] : now)
      if (!m.file_hashes.count(f)) diff.push_back(f + " (new)");
    std::string d = join(diff, ", ");
    add(a, "weight hashes match the manifest", diff.empty(),
        diff.empty() ? fmt::format("{} files, content hash {}", now.size(), m.content_hash.substr(0, 16))
                     : "changed since deployment: " + d);
  }
  if (m.reference.kind == "golden") {
    bool ok = fs::is_regular_file(m.reference.file) && sha256_file(m.reference.file) == m.reference_hash;
    add(a, "reference is independent of the engine", ok,
        ok ? "golden " + m.reference.file.string() + " (sha256 matches the manifest)"
           : "golden " + m.reference.file.string() + " missing or changed since deployment");
  } else if (m.reference.kind == "hf") {
    add(a, "reference is independent of the engine", true, "hf (transformers via tools/hf_reference.py)");
  } else {
    add(a, "reference is independent of the engine", false,
        "oracle: llmport's own fp32 reference kernels, not independent; the verdict is capped at "
        "PASS-with-warnings",
        /*warn_only=*/true);
  }
  add(a, "no test-only fault planted in the deployed engine", m.fault.empty(),
      m.fault.empty() ? "none" : "the last deploy run planted '" + m.fault + "' (the re-run below is fault-free)",
      /*warn_only=*/true);
  bool tuned = m.kernel_configs.contains("tuned") && fs::is_directory(ws.registry()) && !fs::is_empty(ws.registry());
  add(a, "tuned kernels recorded in the deployment registry", tuned,
      tuned ? "registry/ holds the tuned configs" : "no tuned configs in registry/");

  // ---- re-run verify --full from a cleared kernel cache
  std::error_code ec;
  fs::remove_all(ws.kernel_cache(), ec);
  add(a, "kernel cache cleared before the re-run", !fs::exists(ws.kernel_cache()), ws.kernel_cache().string());
  EngineOptions eo = stage_engine_options(m, ws.dir(), ConfigStage::Tuned, m.threads);
  fs::path dir = fresh_dir(ws.verify_reports(), "evaluation");
  fs::remove(dir);
  VerifyOptions vo = deployment_verify_options(m, eo, /*full=*/true, dir);
  vo.kernel_configs = stage_label(ws.dir(), ConfigStage::Tuned);
  vo.log = [&](const std::string& l) { out << l << "\n"; };
  std::optional<VerifyResult> vr;
  try {
    vr = run_verify(m.model_dir, vo);
  } catch (const std::exception& e) {
    add(a, "verify --full re-run", false, std::string("could not run: ") + e.what());
  }
  if (vr) {
    const VerifyResult& r = *vr;
    add(a, "verify --full re-run", r.pass, verify_summary(r));
    add(a, "verify used llmport's shared engine runner", r.runner_kind == "engine" && r.backend == m.target,
        fmt::format("runner {}, backend {} ({}), dtype {}", r.runner_kind, r.backend, r.isa, r.dtype));
    add(a, "engine dtype is the deployment's", r.dtype == m.dtype, "run " + r.dtype + ", manifest " + m.dtype);
    // Counters are "<implementation>:<kernel>"; a call served by `reference` is a fallback.
    const bool fallback = any_reference_dispatch(r.dispatch_counters);
    add(a, "no reference fallback in kernel dispatch", !r.dispatch_counters.empty() && !fallback,
        r.dispatch_counters.empty() ? "no dispatch counters recorded" : nlohmann::json(r.dispatch_counters).dump());
    const auto& sel = *eo.kernels;
    add(a, "tuned kernel configs in use", !r.heuristic_default_configs && sel.heuristic_used.empty(),
        fmt::format("kernel configs: {}; {} weight shapes from the registry, {} served by a heuristic default",
                    r.kernel_configs, sel.chosen.size(), sel.heuristic_used.size()));
    add(a, "packed weights rebuilt from the cleared cache", sel.cache_hits == 0,
        fmt::format("{} packed, {} cache hits", sel.cache_misses, sel.cache_hits));
    add(a, "tolerances are the defaults", r.top_k == kTopK && r.kl_bound == kKlBound,
        fmt::format("top-{} sets, mean KL bound {:.3g} (defaults top-{}, {:.3g})", r.top_k, r.kl_bound, kTopK, kKlBound));
    auto [n_prompts, n_steps] = expected_counts(m);
    bool counts_ok = r.n_steps == n_steps && (n_prompts < 0 ? r.n_prompts >= 8 : r.n_prompts == n_prompts);
    add(a, "prompt and token counts are the defaults", counts_ok,
        fmt::format("{} prompts x {} steps (required {} x {})", r.n_prompts, r.n_steps,
                    n_prompts < 0 ? std::string(">= 8") : std::to_string(n_prompts), n_steps));
    const int64_t need = static_cast<int64_t>(r.n_prompts) * r.n_steps;
    bool did_all = r.engine_tokens_generated == need && r.teacher_forced_steps == need &&
                   r.engine_forward_calls == 2 * need;
    add(a, "the run did everything the prompt set requires", did_all,
        fmt::format("{} tokens generated, {} teacher-forced steps, {} engine forward calls (required {}, {}, {})",
                    r.engine_tokens_generated, r.teacher_forced_steps, r.engine_forward_calls, need, need, 2 * need));
    try {
      ModelConfig cfg = load_model_config(m.model_dir, m.max_seq > 0 ? std::optional<int>(m.max_seq) : std::nullopt);
      WeightStore w = WeightStore::open(m.model_dir, cfg);
      uint64_t per = calls_per_forward(cfg, w, eo);
      uint64_t got = total_calls(r.dispatch_counters);
      uint64_t want = per * static_cast<uint64_t>(r.engine_forward_calls);
      add(a, "kernel dispatch count matches the forward passes", got == want && per > 0,
          fmt::format("{} kernel calls = {} forward passes x {} calls each (measured)", got, r.engine_forward_calls, per));
    } catch (const std::exception& e) {
      add(a, "kernel dispatch count matches the forward passes", false, e.what());
    }
    std::ostringstream rr;
    rr << "`verify --full` with the deployment's engine (" << r.backend << "/" << r.dtype << ", " << r.kernel_configs
       << ") against `" << m.reference.to_arg() << "`, from a cleared kernel cache:\n\n"
       << "- result: **" << (r.pass ? "PASS" : "FAIL") << "**\n"
       << fmt::format("- prompts: {} ({}), steps: {}\n", r.n_prompts, r.prompt_set, r.n_steps)
       << fmt::format("- free-running: {}; teacher-forced: {}\n", r.free_running_pass ? "PASS" : "FAIL",
                      r.teacher_forced_pass ? "PASS" : "FAIL")
       << fmt::format("- mean KL per step {:.4g} (bound {:.4g}), max {:.4g}; top-1 agreement {:.2f}%\n", r.mean_kl,
                      r.kl_bound, r.max_kl, 100.0 * r.top1_agreement)
       << "- report: " << fs::relative(dir, ws.dir(), ec).string() << "/report.md\n";
    for (const auto& f : r.failures) rr << "- failure: " << f << "\n";
    rep.rerun_markdown = rr.str();
  } else {
    rep.rerun_markdown = "The re-run did not complete (see the audit).\n";
  }
  rep.verdict = EvaluationReport::verdict_of(a);
  rep.reproduce = {fmt::format("cd {}", ws.dir().string()), "make verify-full",
                   fmt::format("llmport evaluate {}", ws.dir().string())};
  atomic_write(ws.evaluation_report(), rep.to_markdown());
  out << "evaluation " << m.name << ": Verdict: " << rep.verdict << " (" << ws.evaluation_report().string() << ")\n";
  return rep.verdict == "FAIL" ? kExitCheckFailed : kExitOk;
}

}  // namespace llmport::deploy
