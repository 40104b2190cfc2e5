#pragma once
// The Phase abstraction and the state the pipeline hands to each phase.
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "deploy/manifest.hpp"
#include "deploy/stage.hpp"
#include "deploy/workspace.hpp"
#include "llmport/deploy.hpp"
#include "llmport/dtype.hpp"
#include "llmport/engine.hpp"
#include "llmport/model_config.hpp"
#include "llmport/weights.hpp"

namespace llmport::deploy {

/// Everything a phase may read or record. Phases write their numbers into the PhaseResult
/// they return; the pipeline stores it in the manifest and regenerates the workspace files.
struct Context {
  DeployOptions opt;
  Workspace ws;
  Manifest& m;
  ModelConfig cfg;
  DType dtype = DType::F32;  ///< the weights' dtype (a quantized deployment's unquantized tensors)
  QuantType quant = QuantType::None;  ///< q8_0/q4_0 deployments: the layer projections' format
  ReferenceSpec ref;
  FaultInjection fault;  ///< test-only, applied to the target engine only
  std::ostream& log;     ///< progress lines for the user

  /// Seconds of kernel build / packing / tuning and of model execution in the running
  /// phase (phase_timing.md); phases add to them.
  double compile_s = 0;
  double runtime_s = 0;

  Context(DeployOptions o, Workspace w, Manifest& man, ModelConfig c, std::ostream& l)
      : opt(std::move(o)), ws(std::move(w)), m(man), cfg(std::move(c)), log(l) {}

  /// Memory-mapped weights, opened on first use (phase 0 reports load errors).
  const WeightStore& weights();
  /// Options of the target engine: the deployment's backend, dtype, threads, the kernel
  /// configs of `stage` from the deployment registry, and the planted fault.
  EngineOptions target_engine_options(ConfigStage stage) const;

 private:
  std::optional<WeightStore> weights_;
};

/// One gated phase of the deployment.
class Phase {
 public:
  virtual ~Phase() = default;
  virtual int index() const = 0;
  /// The gate in one line (TODO.md checklist, README).
  virtual std::string gate() const = 0;
  /// Runs the phase. Returns PASS / PASS-with-warnings / FAIL / BLOCKED with numbers;
  /// throwing a GateError counts as FAIL, any other llmport::Error as BLOCKED.
  virtual PhaseResult run(Context& ctx) = 0;
};

std::unique_ptr<Phase> make_phase0_baseline();
std::unique_ptr<Phase> make_phase1_kernels();
std::unique_ptr<Phase> make_phase2_single_block();
std::unique_ptr<Phase> make_phase3_full_model();
std::unique_ptr<Phase> make_phase4_prefill();
std::unique_ptr<Phase> make_phase5_decode();
std::unique_ptr<Phase> make_phase6_finalize();
std::unique_ptr<Phase> make_phase7_evaluation();
/// Phases 0..7 in order.
std::vector<std::unique_ptr<Phase>> make_phases();

/// Convenience constructors of a PhaseResult.
PhaseResult make_result(int phase, PhaseStatus s, std::string reason,
                        nlohmann::json numbers = nlohmann::json::object());

}  // namespace llmport::deploy
