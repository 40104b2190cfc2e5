#pragma once
// ModelConfig: every architecture difference llmport supports is a field here, read by
// one engine. Which classes are accepted, and each one's defaults and deltas, is the
// architecture table (architecture.hpp); resolution applies its row.
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/compat.hpp"

namespace llmport {

/// RoPE frequency scaling, as in HF `modeling_rope_utils.py`.
struct RopeScaling {
  /// "none" (also for "default"/absent), "linear" or "llama3". Other types are rejected
  /// by the architecture gate (reason unsupported_rope_scaling).
  std::string type = "none";
  double factor = 1.0;                        ///< linear and llama3
  double low_freq_factor = 1.0;               ///< llama3
  double high_freq_factor = 4.0;              ///< llama3
  int original_max_position_embeddings = 0;  ///< llama3
};

/// Sampling defaults and stop ids from generation_config.json (all optional).
struct GenerationConfig {
  bool present = false;
  std::vector<int> eos_token_ids;
  std::optional<int> bos_token_id;
  std::optional<bool> do_sample;
  std::optional<double> temperature;
  std::optional<int> top_k;
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<int> max_length;
  std::optional<int> max_new_tokens;
};

/// The resolved decoder configuration of one accepted model.
struct ModelConfig {
  std::string architecture;  ///< e.g. "LlamaForCausalLM"
  std::string model_type;    ///< e.g. "llama"
  int n_layers = 0;          ///< num_hidden_layers
  int emb_dim = 0;           ///< hidden_size
  int n_heads = 0;           ///< num_attention_heads
  int n_kv_heads = 0;        ///< num_key_value_heads (default n_heads)
  int head_dim = 0;          ///< explicit head_dim wins, else emb_dim / n_heads
  int hidden_dim = 0;        ///< intermediate_size (SwiGLU width)
  int vocab_size = 0;
  int max_position_embeddings = 0;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  ///< Qwen2 always; Llama/Qwen3 via attention_bias; Mistral false
  /// o_proj bias [emb_dim]: HF LlamaAttention/Qwen3Attention give o_proj bias=attention_bias;
  /// Qwen2 (o_proj bias=False) and Mistral never have one.
  bool o_bias = false;
  bool qk_norm = false;   ///< Qwen3: per-head RMSNorm on q and k before RoPE
  std::optional<int> bos_token_id;
  std::vector<int> eos_token_ids;  ///< config eos (int or list); union with generation_config
  std::string torch_dtype;         ///< "bfloat16" | "float16" | "float32" | "" (from torch_dtype or dtype)
  std::optional<int> sliding_window;  ///< effective window, if any (only accepted when capped)
  /// Usable context in tokens: max_position_embeddings, or the --max-seq cap.
  int max_seq = 0;
  GenerationConfig generation;
  std::filesystem::path dir;  ///< model directory the config came from (may be empty)

  /// Stop ids: config eos ids union generation_config eos ids (sorted, unique).
  std::vector<int> stop_ids() const;
  /// n_heads / n_kv_heads (query heads per KV head).
  int gqa_group() const { return n_heads / n_kv_heads; }
  /// 1/sqrt(head_dim): softmax scale of scaled dot-product attention.
  double attn_scale() const;
  /// JSON object with the `resolved` field names of configs/expected.json plus the rest.
  nlohmann::json to_json() const;
};

/// Locates config.json: `path` may be a model directory or a config.json file.
/// Throws ConfigError when neither exists, or when the directory's config.json is a
/// directory ("<dir>/config.json: is a directory, expected the config.json file").
std::filesystem::path find_config_json(const std::filesystem::path& path);

/// Reads and parses a JSON file. Throws ConfigError "<file>: <what>" on I/O or parse errors.
nlohmann::json read_json_file(const std::filesystem::path& file);

/// Parses a generation_config.json object (eos_token_id int or list, bos, sampling
/// defaults). Throws ConfigError naming a field of the wrong type.
GenerationConfig parse_generation_config(const nlohmann::json& generation_config);

/// Resolves a raw config.json object (plus optional generation_config.json object) into
/// a ModelConfig. Throws ConfigError naming the missing/invalid field.
/// Does not judge scope: call check_compat for that.
ModelConfig resolve_model_config(const nlohmann::json& config,
                                 const nlohmann::json* generation_config = nullptr);

/// config.json read once: the architecture gate's verdict and, when it accepts, the config
/// resolved from the same parsed object.
struct ConfigCheck {
  std::filesystem::path file;         ///< the config.json that was read
  CompatResult gate;                  ///< check_compat's verdict (with the --max-seq cap)
  std::optional<ModelConfig> config;  ///< set exactly when gate.accepted
};

/// Reads config.json (path: a model directory or the file) once, runs the architecture gate
/// on it and, for an ACCEPT, resolves it as load_model_config does (generation_config.json
/// included). A REJECT is returned, not thrown (gate.accepted false, no config). Throws
/// ConfigError (exit 2) for a missing/unreadable/non-object file or an accepted config whose
/// fields do not resolve, UnsupportedError (exit 3) for an accepted class whose
/// hidden_act/rope_scaling resolution refuses it, UsageError for `max_seq` <= 0 or above
/// max_position_embeddings of a model without a sliding window.
ConfigCheck check_model_config(const std::filesystem::path& path, std::optional<int> max_seq = std::nullopt);

/// Loads config.json (and generation_config.json when present) from a model directory or
/// config.json path, checks the architecture gate and returns the resolved config.
/// `max_seq` caps the context (needed for models with a sliding window).
/// Throws UnsupportedError (exit 3) on REJECT, ConfigError (exit 2) on bad input.
ModelConfig load_model_config(const std::filesystem::path& path,
                              std::optional<int> max_seq = std::nullopt);

/// What `dir`'s files ask transformers to run that llmport does not, one line each naming the
/// file and field (empty when nothing): custom code that an auto_map of config.json or
/// tokenizer_config.json names for AutoConfig, AutoModelForCausalLM or AutoTokenizer and that
/// exists (a module file in `dir`, or another repository's; transformers runs it with
/// trust_remote_code=True); and the generation settings generate() acts on even for greedy
/// decoding, from generation_config.json (or, without one, config.json): token constraints
/// (suppress_tokens, bad_words_ids, no_repeat_ngram_size, min_new_tokens, forced_*_token_id,
/// ...) and decoding modes (num_beams > 1, penalty_alpha, dola_layers, guidance_scale, ...).
/// An absent or unreadable file adds nothing (load_model_config reports it). Never throws.
std::vector<std::string> unrun_model_settings(const std::filesystem::path& dir);
/// Writes one "warning: ... (llmport does not run it)" line per unrun_model_settings(dir)
/// entry to `out` (run and serve say so at start).
void warn_unrun_model_settings(const std::filesystem::path& dir, std::ostream& out);

/// RoPE inverse frequencies [head_dim/2] after rope_scaling, as HF
/// `_compute_default_rope_parameters` / `_compute_linear_scaling_rope_parameters` /
/// `_compute_llama3_parameters` compute them (fp64 math, returned as fp32).
std::vector<float> rope_inv_freq(const ModelConfig& cfg);

}  // namespace llmport
