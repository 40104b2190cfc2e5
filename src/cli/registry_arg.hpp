#pragma once
// `--registry DIR` of `run` and `verify`: a writable kernel registry (e.g. a deployment's
// registry/) looked up before the shipped one, so the engine uses its tuned tile configs.
#include <memory>
#include <string>

#include "llmport/registry.hpp"

namespace llmport::cli {

/// The check every command reading `--registry DIR` makes: throws UsageError "--registry DIR:
/// not a directory (...)" for a missing path, a regular file or anything else that is not a
/// directory, instead of silently reading the shipped registry alone.
void check_registry_dir(const std::string& dir);

/// Kernel selection for an engine on `backend` from the registry directory `dir` (looked
/// up first) plus the shipped registry of that target. Shapes the registry has not measured
/// fall back to the heuristic default and are listed in KernelSelection::heuristic_used.
/// prefill_m = min(512, context), as deployments sweep the prefill GEMM
/// (src/deploy/kernel_tuning.cpp). Throws UsageError when `dir` is not a directory
/// (check_registry_dir).
std::shared_ptr<KernelSelection> registry_selection(const std::string& dir, const std::string& backend,
                                                    int context);

}  // namespace llmport::cli
