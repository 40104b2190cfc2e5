// Phase 4, prefill optimization: sweep the prefill GEMM configs through the registry, prove
// correctness still PASSES, compare prefill time with phase 3's configs (phase_tuning.cpp).
#include "deploy/phase.hpp"
#include "deploy/phase_tuning.hpp"

namespace llmport::deploy {
namespace {

class Phase4 : public Phase {
 public:
  int index() const override { return 4; }
  std::string gate() const override { return "prefill optimization"; }
  PhaseResult run(Context& ctx) override { return run_tuning_phase(ctx, /*prefill=*/true); }
};

}  // namespace

std::unique_ptr<Phase> make_phase4_prefill() { return std::make_unique<Phase4>(); }

}  // namespace llmport::deploy
