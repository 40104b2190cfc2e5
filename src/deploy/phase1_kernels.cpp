// Phase 1, kernel validation: every (kernel, shape, tile config) the engine dispatches on
// the target, at every ISA level the host runs (fused q/k/v and gate/up groups, bias adds,
// the token embeddings as the engine reads them, a --quantize-lm-head lm_head in its
// format), matches the fp32 reference kernels on every output element within
// tolerance(op, dtype, k) (llmport/tolerance.hpp); the report shows measured error,
// tolerance and their ratio per row; the engine ISA's rows land in the deployment registry.
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
    nlohmann::json num = {{"n_checked", kv.n_checked}, {"n_failed", kv.n_failed},
                          {"max_error_to_tolerance_ratio", kv.max_ratio}, {"kernels", kv.rows}};
    ctx.m.kernel_configs["phase1"] = kv.rows;
    if (kv.n_checked == 0)
      return make_result(1, PhaseStatus::Fail, "no (kernel, shape) was validated: zero cases ran", num);
    if (!kv.pass)
      return make_result(1, PhaseStatus::Fail,
                         fmt::format("{} of {} (kernel, shape) checks out of tolerance; first: {}",
                                     kv.n_failed, kv.n_checked, kv.first_failure),
                         num);
    return make_result(1, PhaseStatus::Pass,
                       fmt::format("{} (kernel, shape, config) checks within tolerance on {} ({}) at "
                                   "every ISA level of this host (largest error/tolerance {:.3g}); "
                                   "recorded in registry/ with used_by {}",
                                   kv.n_checked, ctx.m.target,
                                   ctx.m.dtype + (ctx.m.quantize_lm_head.empty() ? "" : ", lm_head " + ctx.m.quantize_lm_head),
                                   kv.max_ratio, ctx.m.name),
                       num);
  }
};

}  // namespace

std::unique_ptr<Phase> make_phase1_kernels() { return std::make_unique<Phase1>(); }

}  // namespace llmport::deploy
