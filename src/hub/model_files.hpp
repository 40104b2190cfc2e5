#pragma once
// The files of a Hugging Face model repository llmport reads.
#include <filesystem>
#include <string>
#include <vector>

namespace llmport::hub {

inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kGenerationConfigFile = "generation_config.json";
inline constexpr const char* kWeightsFile = "model.safetensors";
inline constexpr const char* kWeightsIndexFile = "model.safetensors.index.json";

/// Tokenizer and chat files; each may be absent from a repo (404 is fine).
const std::vector<std::string>& tokenizer_files();

/// The shard file names a model.safetensors.index.json names in its weight_map, sorted,
/// unique. Throws ConfigError naming the file when it is malformed or names a path that
/// leaves the model folder.
std::vector<std::string> index_shards(const std::filesystem::path& index_file);

}  // namespace llmport::hub
