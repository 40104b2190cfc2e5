// Phase 1, kernel validation: every (kernel, shape) the model needs on the target matches
// the fp32 reference kernels element-wise (the registry module's one tolerance table);
// each verified row lands in the deployment registry with used_by = this deployment.
#include <fmt/format.h>

#include "deploy/kernel_tuning.hpp"
#include "deploy/phase.hpp"
#include "deploy/util.hpp"

namespace llmport::deploy {
namespace {

class Phase1 : public Phase {
 public:
  int index() const override { return 1; }
  std::string gate() const override { return "kernel validation"; }

  PhaseResult run(Context& ctx) override {
    Stopwatch sw;
    KernelValidation kv = validate_deployment_kernels(ctx);
    ctx.compile_s += sw.seconds();
    nlohmann::json num = {{"n_checked", kv.n_checked}, {"n_failed", kv.n_failed}, {"kernels", kv.rows}};
    ctx.m.kernel_configs["phase1"] = kv.rows;
    if (kv.n_checked == 0)
      return make_result(1, PhaseStatus::Fail, "no (kernel, shape) was validated: zero cases ran", num);
    if (!kv.pass)
      return make_result(1, PhaseStatus::Fail,
                         fmt::format("{} of {} (kernel, shape) checks out of tolerance; first: {}",
                                     kv.n_failed, kv.n_checked, kv.first_failure),
                         num);
    return make_result(1, PhaseStatus::Pass,
                       fmt::format("{} (kernel, shape) checks within tolerance on {} ({}); recorded "
                                   "in registry/ with used_by {}",
                                   kv.n_checked, ctx.m.target, ctx.m.dtype, ctx.m.name),
                       num);
  }
};

}  // namespace

std::unique_ptr<Phase> make_phase1_kernels() { return std::make_unique<Phase1>(); }

}  // namespace llmport::deploy
