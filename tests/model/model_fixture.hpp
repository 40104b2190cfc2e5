#pragma once
// Helpers of the model tests: copy a shared model into a temp dir, and read/rewrite a
// safetensors file at the byte level to build damaged copies.
#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace llmport::test {

/// Raw parts of a safetensors file: the JSON header (order kept) and the data area.
struct RawSafetensors {
  nlohmann::ordered_json header;
  std::string data;
};

/// Splits a safetensors file into header JSON and data bytes (no validation).
RawSafetensors read_raw_safetensors(const std::filesystem::path& file);

/// Writes header + data; `header_len_override` replaces the 8-byte length field when >= 0.
void write_raw_safetensors(const std::filesystem::path& file, const std::string& header_text,
                           const std::string& data, int64_t header_len_override = -1);
void write_raw_safetensors(const std::filesystem::path& file, const RawSafetensors& st);

/// Copies config.json, generation_config.json (when present) and model.safetensors of
/// `src` into `dst` (created).
void copy_model(const std::filesystem::path& src, const std::filesystem::path& dst);

/// Rewrites `dir`'s model.safetensors as model-0000i-of-0000n.safetensors shards plus a
/// model.safetensors.index.json (tensors dealt round-robin), deleting the single file.
/// Returns the shard file names.
std::vector<std::string> shard_model(const std::filesystem::path& dir, int n_shards);

/// Reads a JSON file (throws std::runtime_error on failure).
nlohmann::json read_json(const std::filesystem::path& file);
void write_json(const std::filesystem::path& file, const nlohmann::json& j);

/// Every model directory in shared/models/synthetic plus shared/models/stories260K.
std::vector<std::filesystem::path> shared_model_dirs();

}  // namespace llmport::test
