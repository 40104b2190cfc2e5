#pragma once
// The rows of phase 7's gate audit, one function per row, each a pure function of what it
// audits (the manifest, the re-run's VerifyResult, the kernel selection the re-run used),
// so that a test can plant the fault a row guards and see the row flip
// (tests/deploy/audit_test.cpp). The evaluator (evaluator.cpp) gathers the inputs.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "deploy/evaluation_report.hpp"
#include "verify/golden_layers.hpp"
#include "deploy/manifest.hpp"
#include "llmport/registry.hpp"
#include "llmport/verify.hpp"

namespace llmport::deploy {

/// Prompts x steps the re-run must cover: every sequence and step of a golden, all of a
/// built-in set (prompts = -1: at least kDefaultPrompts), or a prompt file's count.
struct ExpectedDepth {
  int prompts = -1;
  int steps = kDefaultSteps;
};

/// One row per phase 0-6: PASS -> ok, PASS-with-warnings -> warning (a phase that carried
/// a warning caps the verdict), anything else -> FAIL.
std::vector<AuditItem> audit_phases(const Manifest& m);
/// The target is a backend built into this binary and not the reference kernels.
AuditItem audit_target(const Manifest& m, const std::vector<std::string>& available_backends);
/// Model files hash as recorded; `now` empty with `error` set when hashing failed. A FAIL's
/// detail is one line naming the files ("weights changed since deployment: ...").
AuditItem audit_weights(const Manifest& m, const std::map<std::string, std::string>& now,
                        const std::string& error);
/// audit_weights of the model files in `model_dir` hashed now: the one weight check that
/// evaluate, regress and `verify --deployment` (`make verify`) share. `stats` receives
/// each file's FileStat as hashed (regress refreshes the manifest's with them).
AuditItem audit_model_files(const Manifest& m, const std::filesystem::path& model_dir,
                            std::map<std::string, FileStat>* stats = nullptr);
/// A golden reference file still has the sha256 recorded at deployment.
AuditItem audit_reference_file(const Manifest& m, const std::string& sha256_now);
/// audit_reference_file with the golden (and its side file) hashed now; "" when unreadable.
AuditItem audit_golden_file(const Manifest& m);
/// Independence by kind, provenance and content, as the re-run found it (warning: caps).
AuditItem audit_reference_independence(const VerifyResult& r);
/// Depth: the re-run covered `expected` (FAIL otherwise) and at least the minimum
/// kMinPrompts x kMinSteps (warning otherwise: caps).
AuditItem audit_reference_depth(const VerifyResult& r, const ExpectedDepth& expected);
/// The re-run's top-k and KL bound are the defaults for its dtypes (FAIL otherwise).
AuditItem audit_tolerances(const VerifyResult& r, DType engine_dtype);
/// A quantized deployment (m.dtype q8_0/q4_0): the re-run used the KLD gate with top-k
/// kTopK and the bounds the manifest records (FAIL otherwise); bounds other than the
/// defaults derived from the re-run's predicted cost (derived_kld_gate of kld_gate_defaults,
/// VerifyResult::predicted_mean_kl / predicted_top1; deploy --kl-bound / --min-top1) are a
/// warning (caps the verdict).
AuditItem audit_kld_gate(const VerifyResult& r, const Manifest& m);
/// Runner, backend, dtype and ISA of the re-run are the deployment's.
AuditItem audit_engine(const Manifest& m, const VerifyResult& r);
/// Whether a dispatch counter ("impl:kernel") was served by the reference kernels.
bool is_reference_dispatch(const std::string& counter);
/// No kernel call of the re-run was served by the reference kernels (and some were counted).
AuditItem audit_dispatch(const VerifyResult& r);
/// Every linear shape used a tuned config from the registry, and the configs served are
/// the ones phases 4-5 recorded as in use (kernel_configs.tuned_prefill/decode[].in_use).
AuditItem audit_tuned_configs(const Manifest& m, const VerifyResult& r, const KernelSelection& sel);
/// The kernel cache was cleared and every packed weight rebuilt (no cache hit).
AuditItem audit_kernel_cache(bool cleared, const KernelSelection& sel);
/// Tokens generated, teacher-forced steps, forward calls and kernel dispatches equal what
/// n_prompts x n_steps requires (calls_per_forward measured on the same engine).
AuditItem audit_counts(const VerifyResult& r, uint64_t calls_per_forward);
/// No test-only fault in the deploy run the manifest records, nor in the re-run.
AuditItem audit_fault(const Manifest& m, const VerifyResult& r);
/// Against a golden recording hidden states, the re-run's engine (tuned kernel configs;
/// phase 3 checked the defaults) at every layer (compare_target_golden_layers): FAIL on a
/// contradicting golden record or a gating departure, warning on a departure that does not
/// gate (a quantized deployment's fp32-oracle stand-in).
AuditItem audit_golden_layers(const verify_detail::GoldenLayers& g);
inline constexpr const char* kGoldenLayersCheck = "every layer agrees with the golden's hidden states";
/// The re-run's own verdict: FAIL when its gate failed, warning when it is capped
/// (PASS-with-warnings and its reasons).
AuditItem audit_rerun(const VerifyResult& r);

}  // namespace llmport::deploy
