// Phase 3, full model: `verify` (free-running and teacher-forced gates) PASSES on the
// target with the heuristic-default kernel configs; the diagnosis is saved alongside.
#include <fmt/format.h>

#include "deploy/phase.hpp"
#include "deploy/prompts.hpp"
#include "deploy/util.hpp"
#include "deploy/verify_step.hpp"
#include "llmport/diagnosis.hpp"

namespace llmport::deploy {
namespace {

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
    // Diagnosis next to it (not a gate): where along the depth the engine departs.
    try {
      std::vector<int> ids = first_prompt_ids(ctx);
      const EngineOptions target = ctx.target_engine_options(ConfigStage::Default);
      EngineRunner engine(ctx.cfg, ctx.weights(), target);
      // Same quantized weights on both sides: the per-layer cosines locate kernel faults.
      auto oracle = make_oracle_runner(ctx.cfg, ctx.weights(), ctx.opt.threads, target.quant, target.quant_lm_head,
                                       engine.engine().quant_acts());
      Stopwatch sw;
      DiagnosisResult d = run_diagnosis(engine, *oracle, ids);
      d.model = ctx.m.model_dir.string();
      ctx.runtime_s += sw.seconds();
      auto dir = ctx.ws.phase_dir(3);
      atomic_write(dir / "diagnosis.md", d.to_markdown());
      atomic_write(dir / "diagnosis.json", d.to_json().dump(2) + "\n");
      atomic_write(dir / "diagnosis.svg", d.to_svg());
      r.numbers["diagnosis_first_suspicious_layer"] = d.first_suspicious_layer;
      r.artifacts.push_back("phases/phase3/diagnosis.md");
      if (!d.first_suspicious.empty()) r.numbers["diagnosis_first_suspicious"] = d.first_suspicious;
      if (!v.pass && d.first_suspicious_layer >= 0)
        r.reason += fmt::format("; diagnosis flags layer {} first", d.first_suspicious_layer);
      else if (!v.pass && !d.first_suspicious.empty())
        r.reason += "; diagnosis flags " + d.first_suspicious + " (every layer's output agrees)";
    } catch (const std::exception& e) {
      r.warnings.push_back(std::string("diagnosis not saved: ") + e.what());
    }
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
