#pragma once
// Runs verify (the shared gate of the verify module) for a phase of the pipeline with the
// deployment's engine options and reference, and summarizes the result for the manifest.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "deploy/phase.hpp"
#include "llmport/verify.hpp"

namespace llmport::deploy {

/// A new directory `<parent>/<stem>-<time>[-N]` (created).
std::filesystem::path fresh_dir(const std::filesystem::path& parent, const std::string& stem);

/// verify options for this deployment: target engine (with `engine`), reference, prompts,
/// the manifest's gate parameters (top-k, KL bound); every prompt of the set runs.
VerifyOptions deployment_verify_options(const Manifest& m, const EngineOptions& engine,
                                        const std::filesystem::path& report_dir);

/// Runs verify with the deployment's settings and `stage`'s kernel configs, reports under verify/reports/<stem>-<time>.
/// Adds the run time to ctx.runtime_s.
VerifyResult run_deployment_verify(Context& ctx, ConfigStage stage, const std::string& stem);

/// A phase's status from its verify run: FAIL, PASS-with-warnings when capped, or PASS.
PhaseStatus verify_status(const VerifyResult& r);

/// The numbers of a verify run the manifest keeps.
nlohmann::json verify_numbers(const VerifyResult& r, const std::filesystem::path& deployment_dir);

/// One line: "PASS: 8 prompts x 32 steps, mean KL 1.2e-06 (bound 2e-03), top-1 100%"
/// (the verdict with its caps: "PASS-with-warnings (reference not independent: oracle): ...").
std::string verify_summary(const VerifyResult& r);

}  // namespace llmport::deploy
