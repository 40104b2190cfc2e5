#pragma once
// Architecture gate: ACCEPT | REJECT(reason) from a raw config.json, with the rules written
// at the top of shared/configs/expected.json.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmport {

/// Outcome of the architecture gate.
struct CompatResult {
  bool accepted = false;
  /// First reason by precedence: encoder_decoder > mla > moe > sliding_window >
  /// unsupported_architecture > unsupported_rope_scaling. Empty when accepted.
  std::string reason;
  std::vector<std::string> reasons;  ///< all reasons that apply, in precedence order
  std::string message;               ///< one human-readable line
  std::vector<std::string> notes;    ///< e.g. "context capped at the sliding window (4096)"
  nlohmann::json resolved;           ///< resolved fields (null where unknown)
  std::optional<int> context_cap;    ///< set when --max-seq made a sliding window harmless
};

/// Classifies a raw config.json object. Never throws on fields it cannot parse: those only
/// matter (ConfigError) for accepted architectures, which the caller resolves afterwards.
/// `max_seq`: with N <= the sliding window, sliding-window attention equals full attention.
CompatResult check_compat(const nlohmann::json& config, std::optional<int> max_seq = std::nullopt);

}  // namespace llmport
