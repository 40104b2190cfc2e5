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

/// Classifies a raw config.json object. A foreign architecture's fields are read
/// leniently (it is REJECTed whatever they hold). For a class of the architecture table,
/// throws ConfigError ("field 'K': expected ..., got V") when a field the gate decides on
/// has the wrong type (see src/model/gate_fields.hpp), so a malformed field is never
/// skipped into an ACCEPT; the fields the engine needs are checked when the caller resolves.
/// `max_seq`: with N <= the sliding window, sliding-window attention equals full attention.
CompatResult check_compat(const nlohmann::json& config, std::optional<int> max_seq = std::nullopt);

}  // namespace llmport
