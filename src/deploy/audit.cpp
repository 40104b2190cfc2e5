// Phase 7's audit rows (audit.hpp). Each row compares something the deployment or the
// re-run could get wrong with what it must be; tests/deploy/audit_test.cpp plants the fault
// of every row.
#include "deploy/audit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "deploy/util.hpp"
#include "llmport/deploy.hpp"
#include "llmport/kernels.hpp"

namespace llmport::deploy {

namespace {
AuditItem row(std::string check, bool ok, std::string detail, bool warn_only = false) {
  return {std::move(check), ok ? "ok" : (warn_only ? "warning" : "FAIL"), std::move(detail)};
}
uint64_t total_calls(const std::map<std::string, uint64_t>& c) {
  return std::accumulate(c.begin(), c.end(), uint64_t{0}, [](uint64_t s, const auto& kv) { return s + kv.second; });
}
}  // namespace

std::vector<AuditItem> audit_phases(const Manifest& m) {
  std::vector<AuditItem> rows;
  for (int i = 0; i < kNumPhases - 1; ++i) {
    const auto& p = m.phases[static_cast<std::size_t>(i)];
    std::string detail(status_name(p.status));
    for (const auto& w : p.warnings) detail += "; warning: " + w;
    AuditItem a{fmt::format("phase {} ({}) recorded and passed", i, phase_name(i)), "FAIL", detail};
    if (p.status == PhaseStatus::Pass) a.result = "ok";
    else if (p.status == PhaseStatus::PassWithWarnings) a.result = "warning";
    rows.push_back(std::move(a));
  }
  return rows;
}

AuditItem audit_target(const Manifest& m, const std::vector<std::string>& available) {
  const bool ok = m.target != "reference" && std::find(available.begin(), available.end(), m.target) != available.end();
  return row("engine backend is the deployment's target", ok,
             ok ? "target " + m.target + ", never the reference kernels" : "target '" + m.target + "' not usable");
}

AuditItem audit_weights(const Manifest& m, const std::map<std::string, std::string>& now, const std::string& error) {
  const std::string check = "weight hashes match the manifest";
  if (!error.empty()) return row(check, false, "could not hash the model files: " + error);
  if (m.file_hashes.empty()) return row(check, false, "the manifest records no model files: nothing proves the weights");
  std::vector<std::string> diff;
  for (const auto& [f, h] : m.file_hashes) {
    auto it = now.find(f);
    if (it == now.end()) diff.push_back(f + " (missing)");
    else if (it->second != h) diff.push_back(f);
  }
  for (const auto& [f, h] : now)
    if (!m.file_hashes.count(f)) diff.push_back(f + " (new)");
  // Worded to stand alone: regress and `verify --deployment` print this detail as their
  // FAIL line.
  return row(check, diff.empty(),
             diff.empty() ? fmt::format("{} files, content hash {}", now.size(), m.content_hash.substr(0, 16))
                          : "weights changed since deployment: " + join(diff, ", ") +
                                " (sha256 differs from deployment.json; redeploy, or restore the files)");
}

AuditItem audit_model_files(const Manifest& m, const std::filesystem::path& model_dir,
                            std::map<std::string, FileStat>* stats) {
  std::map<std::string, std::string> now;
  std::string err;
  try {
    now = hash_model_files(model_dir, stats);
  } catch (const std::exception& e) {
    err = e.what();
  }
  return audit_weights(m, now, err);
}

AuditItem audit_reference_file(const Manifest& m, const std::string& sha256_now) {
  if (m.reference.kind != "golden")
    return row("reference file unchanged since deployment", true, m.reference.kind + ": computed at each run");
  const bool ok = !sha256_now.empty() && sha256_now == m.reference_hash;
  const std::string golden = "golden " + m.reference.file.string();
  if (ok) return row("reference file unchanged since deployment", true, golden + " (sha256 matches the manifest)");
  // No hash now means the file (or its side file) could not be read: say so rather than
  // quote a comparison that never happened.
  return row("reference file unchanged since deployment", false,
             sha256_now.empty()
                 ? golden + " missing or unreadable since deployment (deployment.json records its sha256; "
                            "restore the file, or redeploy)"
                 : golden + " changed since deployment (sha256 differs from deployment.json; redeploy, or "
                            "restore the file)");
}

AuditItem audit_golden_file(const Manifest& m) {
  std::string now;
  if (m.reference.kind == "golden" && std::filesystem::is_regular_file(m.reference.file)) {
    try {
      now = reference_files_sha256(m.reference.file);
    } catch (const std::exception&) {  // missing or unreadable: the row says so
    }
  }
  return audit_reference_file(m, now);
}

AuditItem audit_reference_independence(const VerifyResult& r) {
  std::string detail = r.reference_kind + ": " + r.reference_source;
  if (!r.reference_producer.empty()) detail += "; producer: " + r.reference_producer;
  // The largest self-match per llmport computation (the shares of every sequence are in the report).
  std::map<std::string, const SelfMatch*> worst;
  for (const auto& s : r.self_matches)
    if (!worst.count(s.against) || s.share() > worst[s.against]->share()) worst[s.against] = &s;
  for (const auto& [against, s] : worst)
    detail += fmt::format("; at most {:.3g}% of a sequence's logits equal llmport's {}", 100.0 * s->share(), against);
  double steps = 0;
  for (const auto& s : r.self_match_steps) steps = std::max(steps, s.share());
  if (!r.self_match_steps.empty())
    detail += fmt::format("; at most {:.3g}% of a sequence's steps are whole copies of any of them", 100.0 * steps);
  if (const CopyDirection* c = least_copy_direction(r.copy_directions))
    detail += fmt::format("; copy direction: least slope {:.3g} +- {:.2g} against llmport's {} (independent fp32 ~0.5, "
                          "a copy moved in its last bits ~0)",
                          c->beta, c->se, c->against);
  if (r.reference_program.is_object()) detail += "; program: " + r.reference_program.dump();
  if (!r.reference_independent)
    detail = "not independent (" + r.independence_finding + "): the verdict is capped at PASS-with-warnings; " + detail;
  else if (!r.independence_unshown.empty())
    detail = "independence not shown by its content (" + r.independence_unshown +
             "): the verdict is capped at PASS-with-warnings; " + detail;
  return row("reference is independent of the engine (kind, provenance, content)",
             r.reference_independent && r.independence_unshown.empty(), detail, /*warn_only=*/true);
}

AuditItem audit_reference_depth(const VerifyResult& r, const ExpectedDepth& e) {
  const bool all = r.n_steps == e.steps && (e.prompts < 0 ? r.n_prompts >= kDefaultPrompts : r.n_prompts == e.prompts);
  const std::string required = fmt::format("{} x {}", e.prompts < 0 ? fmt::format(">= {}", kDefaultPrompts)
                                                                     : std::to_string(e.prompts), e.steps);
  if (!all)
    return row("reference depth", false,
               fmt::format("{} prompts x {} steps run, the reference set holds {}", r.n_prompts, r.n_steps, required));
  // Distinct prompts: a reference that repeats one prompt is no deeper than that prompt.
  const int distinct = r.prompts.empty() ? r.n_prompts : r.distinct_prompts();
  const int steps = r.prompts.empty() ? r.n_prompts * r.n_steps : r.distinct_steps();
  const bool deep = distinct >= kMinPrompts && r.n_steps >= kMinSteps && steps >= kMinPrompts * kMinSteps;
  return row("reference depth", deep,
             fmt::format("{} prompts ({} distinct) x {} steps, {} distinct steps (every one the reference set holds: "
                         "{}; minimum for PASS {} x {})",
                         r.n_prompts, distinct, r.n_steps, steps, required, kMinPrompts, kMinSteps),
             /*warn_only=*/true);
}

AuditItem audit_tolerances(const VerifyResult& r, DType engine_dtype) {
  const double bound = kl_bound_for(engine_dtype, r.reference_dtype);
  const bool ok = r.top_k == kTopK && r.kl_bound == bound;
  return row("tolerances, top-k and KL bound are the defaults", ok,
             fmt::format("run with top-{} sets and mean KL bound {:.3g}; defaults for {} vs a {} reference: top-{}, "
                         "{:.3g}",
                         r.top_k, r.kl_bound, dtype_name(engine_dtype),
                         r.reference_dtype.empty() ? std::string("unstated") : r.reference_dtype, kTopK, bound));
}

AuditItem audit_kld_gate(const VerifyResult& r, const Manifest& m) {
  const std::string check = "KLD gate of the quantized dtype, with the deployment's bounds";
  const QuantType q = parse_quant(m.dtype);
  if (q == QuantType::None) return row(check, false, "the deployment's dtype " + m.dtype + " is not quantized");
  // The defaults are derived from the format's predicted cost on this model, which the
  // re-run measured again (derived_kld_gate).
  const KldGate d = derived_kld_gate(kld_gate_defaults(q), r.predicted_mean_kl, r.predicted_top1);
  const double kl = m.verify_kl_bound > 0 ? m.verify_kl_bound : d.max_mean_kl;
  const double top1 = m.verify_min_top1 > 0 ? m.verify_min_top1 : d.min_top1;
  const std::string ran = fmt::format("run with the {} gate, top-{}, mean KL <= {:.3g}, top-1 >= {:.1f}%", r.gate,
                                      r.top_k, r.kl_bound, 100.0 * r.min_top1);
  if (r.gate != "kld" || r.top_k != kTopK || r.kl_bound != kl || r.min_top1 != top1)
    return row(check, false,
               ran + fmt::format("; the deployment records mean KL <= {:.3g}, top-1 >= {:.1f}% (top-{})", kl,
                                 100.0 * top1, kTopK));
  const bool defaults = kl == d.max_mean_kl && top1 == d.min_top1;
  return row(check, defaults,
             ran + (defaults ? fmt::format(" (the {} bounds derived for this model from its predicted cost: mean KL {:.3g}, top-1 kept {:.1f}%)",
                                           m.dtype, r.predicted_mean_kl, 100.0 * r.predicted_top1)
                             : fmt::format(": set by the deployment, the {} bounds derived for this model are {:.3g} and {:.1f}%", m.dtype,
                                           d.max_mean_kl, 100.0 * d.min_top1)),
             /*warn_only=*/true);
}

AuditItem audit_engine(const Manifest& m, const VerifyResult& r) {
  std::vector<std::string> bad;
  if (r.runner_kind != "engine") bad.push_back("runner " + r.runner_kind);
  if (r.backend != m.target) bad.push_back("backend " + r.backend + " (deployed on " + m.target + ")");
  if (r.dtype != m.dtype) bad.push_back("dtype " + r.dtype + " (deployed as " + m.dtype + ")");
  // --quantize-lm-head: an evaluation of the other lm_head is not of this deployment.
  const auto head = [](const std::string& q) { return q.empty() ? std::string("unquantized") : q; };
  if (r.lm_head != m.quantize_lm_head)
    bad.push_back("lm_head " + head(r.lm_head) + " (deployed " + head(m.quantize_lm_head) + ")");
  if (m.isa.empty()) bad.push_back("the manifest records no ISA");
  else if (r.isa != m.isa) bad.push_back("ISA " + r.isa + " (validated and tuned on " + m.isa + ")");
  return row("engine backend, dtype and ISA are the deployment's", bad.empty(),
             bad.empty() ? fmt::format("runner {}, backend {} ({}), dtype {}{}", r.runner_kind, r.backend, r.isa, r.dtype,
                                       r.lm_head.empty() ? "" : ", lm_head " + r.lm_head)
                         : join(bad, "; "));
}

bool is_reference_dispatch(const std::string& counter) {
  return dispatch_implementation(counter).rfind("reference", 0) == 0;
}

AuditItem audit_dispatch(const VerifyResult& r) {
  std::vector<std::string> ref;
  for (const auto& [k, v] : r.dispatch_counters)
    if (is_reference_dispatch(k)) ref.push_back(fmt::format("{} x{}", k, v));
  if (r.dispatch_counters.empty()) return row("no reference-kernel dispatch", false, "no dispatch counters recorded");
  return row("no reference-kernel dispatch", ref.empty(),
             ref.empty() ? nlohmann::json(r.dispatch_counters).dump()
                         : "served by the reference kernels: " + join(ref, ", "));
}

AuditItem audit_tuned_configs(const Manifest& m, const VerifyResult& r, const KernelSelection& sel) {
  std::vector<std::string> bad;
  if (r.heuristic_default_configs || !sel.heuristic_used.empty())
    bad.push_back(fmt::format("{} weight shapes served by a heuristic default", sel.heuristic_used.size()));
  if (sel.chosen.empty()) bad.push_back("no weight shape took a registry config");
  if (sel.foreign_skipped > 0) bad.push_back(sel.foreign_line());
  // The registry must serve the configs phases 4-5 decided on (a registry edited after the
  // deployment, e.g. to a config the timing rejected, is caught here).
  for (const char* stage : {"tuned_prefill", "tuned_decode"}) {
    if (!m.kernel_configs.contains(stage) || !m.kernel_configs[stage].is_array()) continue;
    for (const auto& e : m.kernel_configs[stage]) {
      if (!e.contains("in_use") || !e.contains("shape")) continue;
      const std::string key =
          fmt::format("n={} k={}", e["shape"].value("n", -1), e["shape"].value("k", -1));
      auto it = sel.chosen.find(key);
      // Only the keys of the stage's own kernel (a prefill entry's previous config carries
      // the decode keys phase 5 tuned later).
      const TileConfig in_use = kernel_config_subset(e.value("kernel", std::string()), e["in_use"].get<TileConfig>());
      for (const auto& [k, v] : in_use)
        if (it == sel.chosen.end() || !it->second.count(k) || it->second.at(k) != v) {
          bad.push_back(fmt::format("{} {}: the registry serves {} where phases 4-5 chose {}", stage, key,
                                    it == sel.chosen.end() ? std::string("nothing") : nlohmann::json(it->second).dump(),
                                    nlohmann::json(in_use).dump()));
          break;
        }
    }
  }
  return row("tuned kernel configs in use, measured on this machine", bad.empty(),
             fmt::format("kernel configs: {}; {} weight shapes from the registry{}", r.kernel_configs,
                         sel.chosen.size(), bad.empty() ? "" : "; " + join(bad, "; ")));
}

AuditItem audit_kernel_cache(bool cleared, const KernelSelection& sel) {
  return row("kernel cache cleared before the re-run", cleared && sel.cache_hits == 0,
             fmt::format("{}; {} weights packed, {} cache hits", cleared ? "cleared" : "NOT cleared", sel.cache_misses,
                         sel.cache_hits));
}

AuditItem audit_counts(const VerifyResult& r, uint64_t per_forward) {
  const int64_t need = static_cast<int64_t>(r.n_prompts) * r.n_steps;
  const uint64_t calls = total_calls(r.dispatch_counters);
  const uint64_t want_calls = per_forward * static_cast<uint64_t>(std::max<int64_t>(0, 2 * need));
  const bool ok = need > 0 && r.engine_tokens_generated == need && r.teacher_forced_steps == need &&
                  r.engine_forward_calls == 2 * need && per_forward > 0 && calls == want_calls;
  return row("token, forward and dispatch counts equal what the prompt set requires", ok,
             fmt::format("{} tokens generated, {} teacher-forced steps, {} forward calls, {} kernel calls (required "
                         "{}, {}, {}, and {} forward calls x {} kernel calls each = {})",
                         r.engine_tokens_generated, r.teacher_forced_steps, r.engine_forward_calls, calls, need, need,
                         2 * need, 2 * need, per_forward, want_calls));
}

AuditItem audit_fault(const Manifest& m, const VerifyResult& r) {
  std::vector<std::string> f;
  if (!m.fault.empty()) f.push_back("the deploy run planted '" + m.fault + "': its phases measured a faulted engine");
  if (!r.fault.empty()) f.push_back("the re-run planted '" + r.fault + "'");
  return row("no test-only fault planted", f.empty(), f.empty() ? "none" : join(f, "; "));
}

AuditItem audit_rerun(const VerifyResult& r) {
  std::string d = fmt::format("{}: {} prompts x {} steps, mean KL {:.3g} (bound {:.3g}), top-1 agreement {:.1f}%",
                              r.verdict_line(), r.n_prompts, r.n_steps, r.mean_kl, r.kl_bound,
                              100.0 * r.top1_agreement);
  // The KLD gate decides on top-1 agreement too: its bound belongs beside the figure.
  if (r.gate == "kld")
    d += fmt::format(" (bound {:.1f}%), quantized kernels (fp32 activations) vs the {} oracle mean KL {:.3g} (bound {:.3g})",
                     100.0 * r.min_top1, r.dtype, r.kernel_mean_kl, r.kernel_kl_bound);
  if (!r.pass && !r.failures.empty()) d += "; " + r.failures.front();
  // A capped re-run caps the evaluation: verify and the evaluator never disagree.
  if (r.pass && !r.caps.empty()) return {"verify re-run passes", "warning", d};
  return row("verify re-run passes", r.pass, d);
}

AuditItem audit_golden_layers(const verify_detail::GoldenLayers& g) {
  const std::string check = kGoldenLayersCheck;
  if (!g.golden_damaged.empty()) return row(check, false, "golden " + g.golden_damaged);
  if (!g.departs.empty() && g.gating) return row(check, false, "departs: " + g.departs);
  // The fp32 stand-in of a deployment not computing in fp32 departing caps the verdict
  // (phase 3 warns the same).
  return row(check, g.departs.empty(),
             fmt::format("{} of {} sequence{}: {}", g.gating ? "the engine's layers" : "the fp32 oracle's layers (engine not fp32)",
                         g.n_sequences, g.n_sequences == 1 ? "" : "s",
                         g.departs.empty() ? "agree" : "depart, not gating: " + g.departs),
             /*warn_only=*/true);
}

}  // namespace llmport::deploy
