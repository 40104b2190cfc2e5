#pragma once
// Synthetic models: Hugging Face-format directories (config.json, generation_config.json,
// model.safetensors, optionally a copied or a generated printable-ASCII tokenizer) with random weights at real or tiny
// shapes, deterministic by seed on every platform (llmport's own splitmix64 + Box-Muller,
// not std::normal_distribution). Weight scales (fan_in = input width):
//   embeddings N(0, 1); q/k/v/gate/up N(0, 1/sqrt(fan_in)); o_proj/down_proj
//   N(0, out_scale/sqrt(fan_in)) (out_scale per preset); RMSNorm weights 1 + N(0, 0.1);
//   q/k/v biases N(0, 0.5); untied lm_head N(0, logit_std/sqrt(emb_dim)); a tied model's final
//   norm is multiplied by logit_std/sqrt(emb_dim) instead — so logits have a standard deviation
//   of about logit_std (well spread, not near-uniform) at any width.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/dtype.hpp"

namespace llmport {

/// A named synthetic architecture.
struct SynthPreset {
  std::string name;            ///< e.g. "tiny-qwen3", "llama-3.2-1b"
  std::string description;
  nlohmann::json config;       ///< config.json (HF field names, torch_dtype included)
  double out_scale = 1.0;      ///< o_proj / down_proj std multiplier
  double logit_std = 10.0;     ///< target std of the logits
  bool tiny = false;           ///< small enough for tests
};

/// All presets: tinyllama-1.1b, llama-3.2-1b, qwen2.5-0.5b, qwen3-0.6b, mistral-7b (real
/// shapes) and tiny-llama, tiny-qwen2, tiny-qwen3, tiny-mistral (tests).
const std::vector<SynthPreset>& synth_presets();
/// Preset by name; throws UsageError listing the names.
const SynthPreset& synth_preset(const std::string& name);

/// Options of one synthetic model.
struct SynthOptions {
  std::string preset;
  std::filesystem::path out;            ///< output directory (created; must be empty or absent)
  uint64_t seed = 0;
  std::optional<DType> dtype;           ///< stored dtype; default the preset's torch_dtype
  std::filesystem::path tokenizer_dir;  ///< copy tokenizer files from here (optional)
  /// Write a generated printable-ASCII BPE tokenizer sized to the vocabulary, with the
  /// config's BOS/EOS ids as its special tokens (synth_tokenizer.hpp); excludes tokenizer_dir.
  bool ascii_tokenizer = false;
  std::optional<int> vocab_size;        ///< overrides the preset's (the tokenizer's size)
  std::optional<int> bos_token_id;      ///< overrides (from the tokenizer)
  std::vector<int> eos_token_ids;       ///< overrides when non-empty (from the tokenizer)
  /// Allow writing into a non-empty directory: the model there is replaced, so its
  /// tokenizer files this run does not write (kSynthTokenizerFiles) are removed
  /// (SynthResult::removed) rather than read beside the new model.
  bool force = false;
};

/// The tokenizer files a model directory is read with; synth writes or copies a subset.
inline constexpr const char* kSynthTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json",
                                                       "special_tokens_map.json", "chat_template.jinja",
                                                       "tokenizer.model"};

/// What was written.
struct SynthResult {
  std::filesystem::path dir;
  uint64_t n_params = 0;       ///< values written
  uint64_t bytes = 0;          ///< size of model.safetensors (bytes)
  nlohmann::json config;       ///< the config.json written
  /// Files of the replaced model removed under `force` (full paths), for the user to be told.
  std::vector<std::filesystem::path> removed;
};

/// Writes the model directory, streaming the weights; the tensor set is expected_tensors()
/// of the config as resolve_model_config resolves it (the architecture table), so a synthetic
/// model passes the strict tensor-set check by construction (bounded memory, multi-threaded
/// generation, output independent of the thread count). Throws UsageError for an unknown
/// preset, a non-empty output directory without `force`, ascii_tokenizer with tokenizer_dir
/// or a vocabulary too small for it, WeightsError on I/O failure.
SynthResult write_synthetic_model(const SynthOptions& opt);
/// The same for a preset that is not in synth_presets() (opt.preset is ignored), e.g. a tiny
/// config built from an architecture-table row in tests. Also throws ConfigError /
/// UnsupportedError when preset.config does not resolve (resolve_model_config).
SynthResult write_synthetic_model(const SynthOptions& opt, const SynthPreset& preset);

}  // namespace llmport
