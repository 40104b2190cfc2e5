// Phase 3, full model: `verify` (free-running and teacher-forced gates) PASSES on the
// target with the heuristic-default kernel configs, and against a golden every layer's
// recorded hidden state agrees; the diagnosis against the oracle is saved alongside.
#include <fmt/format.h>

#include "verify/golden_layers.hpp"
#include "deploy/phase.hpp"
#include "deploy/prompts.hpp"
#include "deploy/util.hpp"
#include "deploy/verify_step.hpp"
#include "llmport/diagnosis.hpp"

namespace llmport::deploy {
namespace {

// The golden's recorded hidden states at every layer (golden_layers.hpp). A golden record
// that contradicts itself BLOCKs the phase (bad input); the engine departing from the golden
// fails it (the fp32-oracle stand-in of an engine not computing in fp32 departing caps it
// with a warning).
void judge_golden_layers(Context& ctx, EngineRunner& engine, bool quantized, Runner* plain_oracle, PhaseResult& r) {
  const auto golden = golden_records(ctx.ref);
  if (!golden) return;
  Stopwatch sw;
  const verify_detail::GoldenLayers g = verify_detail::compare_target_golden_layers(
      golden, engine, quantized, ctx.cfg, ctx.weights(), ctx.opt.threads, plain_oracle);
  ctx.runtime_s += sw.seconds();
  r.numbers["golden_layers"] = g.to_json();
  if (!g.golden_damaged.empty()) {
    r.status = PhaseStatus::Blocked;
    r.bad_input = true;
    r.reason = "golden " + g.golden_damaged;
  } else if (!g.departs.empty() && g.gating) {
    r.reason = (is_pass(r.status) ? "" : r.reason + "; ") + "every layer vs the golden: " + g.departs;
    r.status = PhaseStatus::Fail;
  } else if (g.n_sequences == 0 && !g.unrecorded.empty()) {
    r.reason += verify_detail::unrecorded_phrase(g.unrecorded, g.n_sequences);
  } else if (g.n_sequences > 0) {
    r.reason += fmt::format("; {} hidden states of {} golden sequence{} {}", g.gating ? "every layer's" : "fp32 oracle's",
                            g.n_sequences, g.n_sequences == 1 ? "" : "s",
                            g.departs.empty() ? "agree" : "depart (not gating): " + g.departs) +
                verify_detail::unrecorded_phrase(g.unrecorded, g.n_sequences);
    // The independent reference disagreeing with llmport's own fp32 computation does not
    // vanish from the verdict because the engine does not compute in fp32: it caps it.
    if (!g.departs.empty()) {
      r.warnings.push_back("the golden's hidden states depart from llmport's fp32 oracle (not gating: the "
                           "deployment does not compute in fp32): " + g.departs);
      if (r.status == PhaseStatus::Pass) r.status = PhaseStatus::PassWithWarnings;
    }
  }
}

// Diagnosis next to the verdict (not a gate): where along the depth the engine departs
// from the oracle on the first prompt.
void save_diagnosis(Context& ctx, EngineRunner& engine, Runner& oracle, bool passed, PhaseResult& r) {
  try {
    const std::vector<int> ids = first_prompt_ids(ctx);
    Stopwatch sw;
    DiagnosisResult d = run_diagnosis(engine, oracle, ids);
    d.model = ctx.m.model_dir.string();
    ctx.runtime_s += sw.seconds();
    auto dir = ctx.ws.phase_dir(3);
    atomic_write(dir / "diagnosis.md", d.to_markdown());
    atomic_write(dir / "diagnosis.json", d.to_json().dump(2) + "\n");
    atomic_write(dir / "diagnosis.svg", d.to_svg());
    r.numbers["diagnosis_first_suspicious_layer"] = d.first_suspicious_layer;
    r.artifacts.push_back("phases/phase3/diagnosis.md");
    if (!d.first_suspicious.empty()) r.numbers["diagnosis_first_suspicious"] = d.first_suspicious;
    if (!passed && d.first_suspicious_layer >= 0)
      r.reason += fmt::format("; diagnosis flags layer {} first", d.first_suspicious_layer);
    else if (!passed && !d.first_suspicious.empty())
      r.reason += "; diagnosis flags " + d.first_suspicious + " (every layer's output agrees)";
  } catch (const std::exception& e) {
    r.warnings.push_back(std::string("diagnosis not saved: ") + e.what());
  }
}

class Phase3 : public Phase {
 public:
  int index() const override { return 3; }
  std::string gate() const override { return "full model"; }

  PhaseResult run(Context& ctx) override {
    VerifyResult v = run_deployment_verify(ctx, ConfigStage::Default, "phase3");
    nlohmann::json num;
    num["verify"] = verify_numbers(v, ctx.ws.dir());
    PhaseResult r = make_result(3, verify_status(v), "verify " + verify_summary(v), num);
    r.warnings = v.caps;
    r.artifacts.push_back(num["verify"].value("report_dir", ""));
    const EngineOptions target = ctx.target_engine_options(ConfigStage::Default);
    EngineRunner engine(ctx.cfg, ctx.weights(), target);
    // Same quantized weights on both sides: the per-layer cosines locate kernel faults.
    auto oracle = make_oracle_runner(ctx.cfg, ctx.weights(), ctx.opt.threads, target.quant, target.quant_lm_head,
                                     engine.engine().quant_acts());
    const bool quantized = target.quant != QuantType::None;
    // An unquantized target's oracle is the plain fp32 one the layer check needs.
    judge_golden_layers(ctx, engine, quantized, quantized ? nullptr : oracle.get(), r);
    save_diagnosis(ctx, engine, *oracle, is_pass(r.status), r);
    if (v.pass) {
      ctx.m.measured["verify mean KL (phase 3)"] = v.mean_kl;
      ctx.m.measured["verify top-1 agreement (phase 3)"] = v.top1_agreement;
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Phase> make_phase3_full_model() { return std::make_unique<Phase3>(); }

}  // namespace llmport::deploy
