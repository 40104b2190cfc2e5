#include "deploy/phase.hpp"

#include "deploy/kernel_tuning.hpp"

namespace llmport::deploy {

const WeightStore& Context::weights() {
  if (!weights_) weights_.emplace(WeightStore::open(m.model_dir, cfg));
  return *weights_;
}

EngineOptions Context::target_engine_options(ConfigStage stage) const {
  return stage_engine_options(m, ws.dir(), stage, opt.threads, fault);
}

PhaseResult make_result(int phase, PhaseStatus s, std::string reason, nlohmann::json numbers) {
  PhaseResult r;
  r.phase = phase;
  r.status = s;
  r.reason = std::move(reason);
  r.numbers = std::move(numbers);
  return r;
}

std::vector<std::unique_ptr<Phase>> make_phases() {
  std::vector<std::unique_ptr<Phase>> v;
  v.push_back(make_phase0_baseline());
  v.push_back(make_phase1_kernels());
  v.push_back(make_phase2_single_block());
  v.push_back(make_phase3_full_model());
  v.push_back(make_phase4_prefill());
  v.push_back(make_phase5_decode());
  v.push_back(make_phase6_finalize());
  v.push_back(make_phase7_evaluation());
  return v;
}

}  // namespace llmport::deploy
