#pragma once
// deployment.json: the deployment's manifest (model path and content hash, target, dtype,
// reference, per-phase status, chosen kernel configs). The evaluator reads only this file
// plus what it names.
#include <array>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/deploy.hpp"

namespace llmport::deploy {

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

  Manifest();
  nlohmann::json to_json() const;
  static Manifest from_json(const nlohmann::json& j, const std::filesystem::path& file);
  /// Reads deployment.json. Throws ConfigError naming the file on malformed content.
  static Manifest load(const std::filesystem::path& file);
  void save(const std::filesystem::path& file);

  /// Index of the first phase not passed (kNumPhases when all passed).
  int first_unpassed() const;
};

/// Hashes the model files llmport reads (config, generation config, weights, tokenizer).
/// Returns file -> sha256 (file relative to model_dir).
std::map<std::string, std::string> hash_model_files(const std::filesystem::path& model_dir);
/// sha256 over the sorted "name:hash\n" lines.
std::string combine_hashes(const std::map<std::string, std::string>& hashes);

}  // namespace llmport::deploy
