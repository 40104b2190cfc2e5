#pragma once
// Shared body of phases 4 (prefill) and 5 (decode): sweep, correctness, interleaved timing.
#include "deploy/phase.hpp"

namespace llmport::deploy {

/// Runs phase 4 (prefill = true) or 5 (prefill = false).
PhaseResult run_tuning_phase(Context& ctx, bool prefill);

}  // namespace llmport::deploy
