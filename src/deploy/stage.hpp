#pragma once
// Which kernel configs an engine of the deployment uses at a given point of the pipeline.

namespace llmport::deploy {

enum class ConfigStage {
  Default,  ///< heuristic defaults (phases 1-3)
  Prefill,  ///< phase 4's tuned prefill configs, decode still default
  Tuned,    ///< prefill and decode tuned (phases 5-7, Makefile, evaluation, regress)
};

}  // namespace llmport::deploy
