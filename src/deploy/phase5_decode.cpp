// Phase 5, decode optimization: sweep the decode GEMV configs through the registry, prove
// correctness still PASSES, compare decode time per token with phase 4's configs.
#include "deploy/phase.hpp"
#include "deploy/phase_tuning.hpp"

namespace llmport::deploy {
namespace {

class Phase5 : public Phase {
 public:
  int index() const override { return 5; }
  std::string gate() const override { return "decode optimization"; }
  PhaseResult run(Context& ctx) override { return run_tuning_phase(ctx, /*prefill=*/false); }
};

}  // namespace

std::unique_ptr<Phase> make_phase5_decode() { return std::make_unique<Phase5>(); }

}  // namespace llmport::deploy
