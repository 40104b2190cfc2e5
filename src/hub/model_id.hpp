#pragma once
// Hugging Face model ids: `org/name[@revision]`, validated as huggingface_hub's
// validate_repo_id does (utils/_validators.py).
#include <optional>
#include <string>

namespace llmport::hub {

struct ModelId {
  std::string repo_id;    ///< "org/name"
  std::string revision;   ///< branch, tag or commit hash; "main" when not given
};

/// Parses `org/name[@revision]`; nullopt when the text is not shaped like an id.
std::optional<ModelId> parse_model_id(const std::string& text);

/// A full 40-hex-digit git commit hash (huggingface_hub REGEX_COMMIT_HASH).
bool is_commit_hash(const std::string& s);

/// `sha256` hex digest shape: 64 lowercase hex digits.
bool is_sha256_hex(const std::string& s);

}  // namespace llmport::hub
