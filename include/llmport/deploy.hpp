#pragma once
// `llmport deploy`: the phased deployment pipeline (phases 0-7 with hard gates), its
// workspace (`<workspace>/<name>/`), the independent evaluation (phase 7) and the
// `status` / `regress` views over existing deployments.
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmport::deploy {

/// Outcome of one phase gate. NotRun: never run, or reset by --from-phase.
enum class PhaseStatus { NotRun, Pass, PassWithWarnings, Fail, Blocked };

/// "NOT-RUN", "PASS", "PASS-with-warnings", "FAIL", "BLOCKED".
std::string_view status_name(PhaseStatus s) noexcept;
/// Inverse of status_name. Throws ConfigError for anything else.
PhaseStatus parse_status(std::string_view s);
/// PASS or PASS-with-warnings: the pipeline may advance past it.
bool is_pass(PhaseStatus s) noexcept;

/// Number of phases (0..7).
inline constexpr int kNumPhases = 8;
/// Short name of phase `i` ("Reference baseline", ..., "Independent evaluation").
std::string_view phase_name(int i);

/// Wall-clock accounting of one phase (phase_timing.md).
struct PhaseTiming {
  std::string start;        ///< ISO-8601 UTC timestamp
  std::string end;          ///< ISO-8601 UTC timestamp
  double wall_min = 0;      ///< end - start, minutes
  double compile_min = 0;   ///< kernel build, weight packing, tuning sweeps, minutes
  double runtime_s = 0;     ///< time spent running the model (forward passes), seconds
  /// wall - compile - runtime, minutes: orchestration, file I/O, report writing.
  double residual_min() const { return wall_min - compile_min - runtime_s / 60.0; }
  nlohmann::json to_json() const;
  static PhaseTiming from_json(const nlohmann::json& j);
};

/// What one phase returns: the verdict with its numbers and reason.
struct PhaseResult {
  int phase = 0;
  PhaseStatus status = PhaseStatus::NotRun;
  std::string reason;                 ///< one line: why (or what passed)
  nlohmann::json numbers = nlohmann::json::object();  ///< measured values the gate used
  std::vector<std::string> warnings;  ///< reasons for PASS-with-warnings
  std::vector<std::string> artifacts; ///< files written, relative to the deployment dir
  PhaseTiming timing;
  /// A BLOCKED phase whose blocker is the user's input (a damaged golden or model file): the
  /// run exits 2, as every command does for bad input, not 1. Not saved in the manifest.
  bool bad_input = false;
  nlohmann::json to_json() const;
  /// One entry of deployment.json's "phases"; `path` ("phases[3]") names it in the
  /// ConfigError thrown for a field of the wrong type or an unknown status.
  static PhaseResult from_json(const nlohmann::json& j, const std::string& path);
};

/// `--reference golden:FILE | hf | numpy | oracle`.
struct ReferenceSpec {
  std::string kind = "oracle";  ///< "golden" | "hf" | "numpy" | "oracle"
  std::filesystem::path file;   ///< golden file (absolute) for kind "golden"
  /// A reference computed outside llmport (golden, hf, numpy). The oracle is llmport's own fp32
  /// reference kernels: allowed, but it caps the evaluation at PASS-with-warnings.
  bool independent() const { return kind != "oracle"; }
  /// The spelling `llmport verify --reference` takes ("golden:/abs/file", "hf", "numpy", "oracle").
  std::string to_arg() const;
  /// Parses the CLI spelling; a golden file must exist (made absolute). Throws UsageError.
  static ReferenceSpec parse(const std::string& s);
};

/// Options of `llmport deploy`.
struct DeployOptions {
  std::string model;              ///< model directory or HF id, as given
  std::filesystem::path model_dir;  ///< resolved model directory
  std::string repo_id;            ///< HF id when it came from the hub
  std::string revision;           ///< requested HF revision when it came from the hub
  std::string commit;             ///< resolved HF commit hash when known
  /// Context cap (`--max-seq N`): passed to the architecture gate (a sliding window
  /// <= N is harmless) and to every run/verify of the deployment.
  std::optional<int> max_seq;
  std::string name;               ///< deployment name; empty = default_deployment_name
  std::string target = "cpu";     ///< a backend of available_backends() (not "reference")
  /// "bf16"|"fp16"|"fp32"; "q8_0"|"q4_0" for weight-only quantization of the layer
  /// projections over the checkpoint's dtype (judged by the KLD gate, llmport/verify.hpp
  /// KldGate); empty = checkpoint torch_dtype.
  std::string dtype;
  std::string quantize_lm_head;   ///< "q8_0"|"q4_0": lm_head too (quantized dtype only)
  /// Quantized dtypes only: the deployment's own KLD gate bounds (default
  /// kld_gate_defaults); recorded in deployment.json and the reports, and an audit warning.
  std::optional<double> kl_bound;
  std::optional<double> min_top1;
  std::filesystem::path workspace = "deployments";
  std::string reference = "oracle";  ///< golden:FILE | hf | numpy | oracle
  /// Prompt file for the deployment's checks and verify (`verify --prompts` format);
  /// empty = the reference's sequences (golden) or verify's built-in set.
  std::filesystem::path prompts;
  std::optional<int> from_phase;  ///< resume at phase N (every phase < N must have passed)
  bool resume = false;            ///< resume an existing deployment at its first unpassed phase
  bool interactive = false;       ///< ask before advancing past each PASS
  int threads = 0;                ///< 0 = all cores
  /// --threads was given. Without it a resumed deployment keeps the count deployment.json
  /// records (its tuned registry entries were measured at that count).
  bool threads_given = false;
  /// --reference was given. A resume (--resume, --from-phase) continues as deployed: an
  /// option left out (--reference, --dtype, --quantize-lm-head, --kl-bound, --min-top1,
  /// --max-seq, --prompts) takes deployment.json's value; one given that differs is refused.
  bool reference_given = false;
  /// Test-only: planted engine fault (FaultInjection::parse syntax), applied to the
  /// target engine, never to the reference.
  std::string fault;
  /// Test-only: shorter timing runs in phases 4-5 (fewer tokens, smaller time budget; still
  /// >= 5 interleaved runs).
  bool quick = false;
  /// Stop after this phase (inclusive); default all phases.
  int last_phase = kNumPhases - 1;
};

/// Longest deployment name (check_deployment_name).
inline constexpr std::size_t kMaxDeploymentNameLength = 100;

/// Throws UsageError (one line naming --name) unless `name` is a deployment name:
/// ^[A-Za-z0-9][A-Za-z0-9._-]*$, at most kMaxDeploymentNameLength characters. The name
/// becomes a directory, a lock-file name and a word of the generated Makefile and docs, so
/// only characters that mean nothing to make, the shell or a path are allowed.
void check_deployment_name(const std::string& name);

/// Default deployment name: the model directory's name (or HF id, '/' -> '_') lower-cased,
/// every character outside [a-z0-9._-] replaced by '_', leading '.', '-' and '_' dropped,
/// cut to kMaxDeploymentNameLength ("model" when nothing is left). Always passes
/// check_deployment_name.
std::string default_deployment_name(const std::string& model_arg,
                                    const std::filesystem::path& model_dir);

/// Runs `llmport deploy`. Questions (existing workspace, --interactive) go to `out` and
/// answers are read from `in` (a line; no answer = no). Returns the exit code:
/// 0 all phases PASS / PASS-with-warnings, 1 a gate failed or is blocked (or the user
/// stopped), 2 bad input (also: existing workspace and nobody to ask), 3 architecture
/// rejected (nothing written). Throws llmport::Error for bad input.
int run_deploy(DeployOptions opt, std::istream& in, std::ostream& out);

/// Phase 7, run inside a fresh `llmport evaluate DIR` process: reads only the deployment
/// (deployment.json, registry/, the model it names), audits the gates, re-runs verify
/// --full from a cleared kernel cache and writes docs/evaluation_report.md.
/// Returns 0 for PASS / PASS-with-warnings, 1 for FAIL.
int evaluate_deployment(const std::filesystem::path& deployment_dir, std::ostream& out);

/// `llmport status [NAME]`: phase table of one deployment or all under `workspace`.
/// A deployment whose deployment.json cannot be read is listed as "unreadable: <reason>"
/// and the listing goes on (returns 2 at the end; 0 when every row was read). A phase not
/// yet run is "in progress" only while a deploy holds the deployment's lock, else "stopped
/// before phase N". Throws UsageError when NAME (or the workspace)
/// does not exist.
int print_status(const std::filesystem::path& workspace, const std::string& name,
                 std::ostream& out, bool json);

/// `llmport regress`: re-verifies every deployment under `workspace` (`make verify`
/// semantics: the deployment's backend, dtype and tuned kernels against its reference),
/// one deployment per device at a time (file lock `<workspace>/.lock-<target>`).
/// Returns 0 when all pass, 1 when any fails or has an unreadable deployment.json (the
/// others are still re-verified).
int run_regress(const std::filesystem::path& workspace, std::ostream& out);

/// `verify --deployment DIR` (every `make verify` of a deployment passes it): evaluate's
/// weight check of the model files in `model_dir`, and of the deployment's golden file,
/// against DIR's deployment.json. Returns "" when they hash as recorded, else one line naming
/// the files ("weights changed since deployment: model.safetensors (...)", "golden G missing
/// or changed since deployment (...)"). Throws UsageError when DIR is not a deployment,
/// ConfigError when its deployment.json is malformed.
std::string check_deployed_weights(const std::filesystem::path& deployment_dir,
                                   const std::filesystem::path& model_dir);

/// What `serve DIR` and `run --deployment DIR` (`make run`, `make profile`) take from a
/// deployment's deployment.json, read once.
struct DeploymentRun {
  std::filesystem::path model_dir;  ///< the deployed model (absolute; may since be gone)
  std::string name;
  std::string dtype;                ///< as deployed: "bf16" | "fp16" | "fp32" | "q8_0" | "q4_0"
  std::string quantize_lm_head;     ///< "" | "q8_0" | "q4_0"
  int threads = 0;                  ///< as deployed (0 = every core)
  /// "" when the model run is the deployed one and each of its files has the size and
  /// mtime recorded when it was hashed (a stat per file, as `status`; hashed instead for a
  /// manifest that recorded no stats), else one line: "MODEL is not the deployed model M"
  /// or "weights changed? F: size or mtime differs from deployment (...)". Cheap by design:
  /// a differing stat is no proof of other bytes and a matching one no proof of the same;
  /// `make verify` hashes.
  std::string drift;
  /// "" when every phase passed and the deployment is not flagged for human review, else
  /// one line: "phase N (NAME) is STATUS: REASON" for the first phase that did not pass, or
  /// "flagged for human review (evaluation_report.md)".
  std::string not_passed;
};

/// Reads DIR's deployment.json (DIR, or the file itself) for a run of `model_dir` (empty:
/// the deployed model). Throws UsageError when DIR is not a deployment, ConfigError naming
/// the file and field when its deployment.json is malformed.
DeploymentRun read_deployment_run(const std::filesystem::path& deployment_dir,
                                  const std::filesystem::path& model_dir = {});

/// Path of the running llmport executable (the evaluator and Makefile call it).
std::filesystem::path self_executable();

}  // namespace llmport::deploy
