#pragma once
// ADAPTER between the pipeline and the registry module (fastcpu issue): phase-1 kernel
// validation, phase-4/5 sweeps, and the engine options that select a stage's kernel
// configs. Only calls into registry.hpp; no registry logic lives here.
#include <string>

#include <nlohmann/json.hpp>

#include "deploy/phase.hpp"
#include "deploy/stage.hpp"
#include "llmport/registry.hpp"

namespace llmport::deploy {

/// Phase 1 outcome.
struct KernelValidation {
  bool pass = false;
  int n_checked = 0;
  int n_failed = 0;
  nlohmann::json rows = nlohmann::json::array();  ///< one per (kernel, shape, dtype)
  std::string first_failure;  ///< validation_row_string of the first failing row
  double max_ratio = 0;       ///< largest measured error / tolerance over the rows
};

/// Phase 1's verdict from validation rows (shared with its tests). Each row's "format" is
/// its weight format: the block format of a quantized linear (q8_0/q4_0), else `dtype`'s name.
KernelValidation summarize_validation(const std::vector<ValidationRow>& rows, DType dtype);

/// Validates every (kernel, shape, tile config) the engine dispatches on the target, at
/// every ISA level the host runs, against the reference kernels (full outputs, tolerance()
/// per row) and records the engine ISA's rows (used_by = deployment name) in the
/// deployment's registry (<ws>/registry).
KernelValidation validate_deployment_kernels(Context& ctx);

/// Phase 4/5 sweep outcome.
struct SweepOutcome {
  bool same_as_current = false;  ///< best configs == the ones the previous phase used
  /// "" or why nothing was swept or recorded: every linear is quantized, so no base-dtype
  /// GEMM/GEMV asks the registry for a tile config.
  std::string nothing_to_tune;
  nlohmann::json best = nlohmann::json::array();  ///< chosen configs per (kernel, shape)
};

/// Sweeps the prefill (GEMM etc.) or decode (GEMV etc.) kernels of this model, recording
/// the measured configs in the deployment registry.
SweepOutcome sweep_deployment_kernels(Context& ctx, bool prefill);

/// Keeps the previous stage's configs after a sweep whose tuned configs were not
/// measurably faster: every entry the sweep recorded gets best = the config the previous
/// stage used for that shape (the sweep's candidates stay recorded), in the deployment
/// registry and, for the prefill sweep, in phase 4's snapshot.
void keep_previous_configs(Context& ctx, const SweepOutcome& sweep, bool prefill);

/// Engine options of the target with the kernel configs of `stage` from the deployment
/// registry. Works from the manifest alone (the evaluator and regress use it too).
EngineOptions stage_engine_options(const Manifest& m, const std::filesystem::path& deployment_dir,
                                   ConfigStage stage, int threads, const FaultInjection& fault = {});

/// Before `cache_dir` (a deployment's kernel_cache/, llmport's: packed weights only) is
/// removed, moves what is not a packed-weight cache file into `<cache_dir>.user-<time>`
/// with a `warning:` line on `warn` (set_aside_unknown_files). Throws UsageError when it
/// cannot (the cache must then stay).
void set_aside_user_files_in_kernel_cache(const std::filesystem::path& cache_dir, std::ostream& warn);

/// Label verify reports carry for the stage ("heuristic-default", "tuned:<registry dir>").
std::string stage_label(const std::filesystem::path& deployment_dir, ConfigStage stage);

}  // namespace llmport::deploy
