#pragma once
// deployment.json: the deployment's manifest (model path and content hash, target, dtype,
// reference, per-phase status, chosen kernel configs). The evaluator reads only this file
// plus what it names.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/deploy.hpp"

namespace llmport::deploy {

/// Size and modification time of a model file when it was hashed: `status` compares these
/// (a stat per file) instead of re-hashing gigabytes on every call; regress and
/// `verify --deployment` re-hash.
struct FileStat {
  std::uintmax_t size = 0;
  std::int64_t mtime_ns = 0;  ///< st_mtim, nanoseconds since the Unix epoch
  bool operator==(const FileStat&) const = default;
};

struct Manifest {
  static constexpr const char* kFormat = "llmport-deployment/1";
  std::string name;
  std::filesystem::path model_dir;  ///< absolute
  std::string repo_id;              ///< HF id when it came from the hub
  std::string revision;             ///< requested HF revision (e.g. "main") when from the hub
  std::string commit;               ///< resolved HF commit hash when from the hub
  /// sha256 per model file (config.json, generation_config.json, weight files, tokenizer),
  /// keyed by the file name relative to model_dir.
  std::map<std::string, std::string> file_hashes;
  /// FileStat per file of file_hashes, taken when they were hashed (empty in manifests
  /// written before llmport recorded it: status then hashes).
  std::map<std::string, FileStat> file_stats;
  /// sha256 over the sorted "name:hash" lines of file_hashes: the model's content hash.
  std::string content_hash;
  std::string architecture;
  std::string target;  ///< backend name, e.g. "cpu"
  std::string dtype;   ///< "bf16" | "fp16" | "fp32", or "q8_0" | "q4_0" (quantized projections)
  std::string quantize_lm_head;  ///< "" | "q8_0" | "q4_0"
  int threads = 0;     ///< engine threads (0 = all cores), as deployed
  std::string isa;     ///< the target's ISA when the deployment was validated and tuned
  /// The verify gate's parameters every phase ran with: top-k of the token-set gates and
  /// the mean-KL bound (the evaluator re-runs with these and audits them against the
  /// defaults, so an edited bound is caught, not silently obeyed).
  int verify_top_k = 5;
  double verify_kl_bound = 0;  ///< 0 = the dtype default (kl_bound_for, kld_gate_defaults)
  double verify_min_top1 = 0;  ///< quantized dtypes: 0 = kld_gate_defaults(quant).min_top1
  int max_seq = 0;     ///< `deploy --max-seq` context cap (0 = the config's), passed on to run/verify
  ReferenceSpec reference;
  std::string reference_hash;  ///< sha256 of the golden file
  bool has_tokenizer = false;
  std::filesystem::path prompts_file;  ///< --prompts FILE (absolute), empty = default set
  std::vector<int> first_prompt_ids;   ///< phase 0's prompt (Makefile PROMPT_IDS default)
  std::string llmport_version;
  std::string created;
  std::string updated;
  std::array<PhaseResult, kNumPhases> phases;
  /// {"phase1": <validation registry rows>, "tuned_prefill": ..., "tuned_decode": ...}
  nlohmann::json kernel_configs = nlohmann::json::object();
  nlohmann::json resolved_config = nlohmann::json::object();
  /// Measured performance for README (prefill tokens/s, decode ms/token...).
  nlohmann::json measured = nlohmann::json::object();
  std::string fault;  ///< test-only planted fault of the last run ("" none)
  bool quick = false;
  bool needs_human_review = false;
  /// Top-level keys of deployment.json that llmport does not write (a user's notes), kept
  /// as read and written back by every save, so an edit that adds one is never dropped.
  nlohmann::json user_keys = nlohmann::json::object();

  Manifest();
  nlohmann::json to_json() const;
  static Manifest from_json(const nlohmann::json& j, const std::filesystem::path& file);
  /// Reads deployment.json. Throws ConfigError naming the file on malformed content.
  static Manifest load(const std::filesystem::path& file);
  void save(const std::filesystem::path& file);

  /// Index of the first phase not passed (kNumPhases when all passed).
  int first_unpassed() const;
};

/// The model files llmport reads (config, generation config, the weights as weight_files
/// chooses them, tokenizer files) in model_dir, relative to it, sorted. Throws WeightsError
/// for an unreadable index.
std::vector<std::string> model_file_names(const std::filesystem::path& model_dir);
/// Hashes the model files (model_file_names). Returns file -> sha256 (file relative to
/// model_dir); `stats`, when given, receives each file's FileStat taken before its hash (a
/// file written while it was hashed then differs from its recorded stat).
std::map<std::string, std::string> hash_model_files(const std::filesystem::path& model_dir,
                                                    std::map<std::string, FileStat>* stats = nullptr);
/// The manifest a `--deployment` argument names: a deployment directory, or its
/// deployment.json itself. Throws UsageError "--deployment ARG: not a deployment (no
/// deployment.json)", ConfigError when the file is malformed.
Manifest load_deployment_arg(const std::filesystem::path& arg);
/// FileStat of one file; nullopt when it cannot be stat'ed.
std::optional<FileStat> stat_file(const std::filesystem::path& file);
/// FileStat of each of `names` in model_dir (the ones that can be stat'ed).
std::map<std::string, FileStat> stat_model_files(const std::filesystem::path& model_dir,
                                                 const std::map<std::string, std::string>& names);
/// The cheap check of `status`: the files of m.file_hashes whose size or mtime in model_dir
/// differ from m.file_stats (or have no stat recorded), "NAME (missing)" for those gone,
/// "NAME (new)" for model files not hashed at deployment; empty when all match. A match is
/// no proof (same size and mtime, other bytes): regress and verify hash.
std::vector<std::string> stat_changed_files(const Manifest& m, const std::filesystem::path& model_dir);
/// sha256 over the sorted "name:hash\n" lines.
std::string combine_hashes(const std::map<std::string, std::string>& hashes);

}  // namespace llmport::deploy
