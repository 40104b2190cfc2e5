#pragma once
// Type rules for the config.json fields the architecture gate reads, applied when the
// architecture is one of the table's rows (so that the verdict could be ACCEPT).
#include <nlohmann/json.hpp>

namespace llmport::detail {

/// Throws ConfigError ("field 'K': expected ..., got V") when a field the gate decides on
/// has the wrong JSON type, or layer_types does not have one entry per layer (transformers'
/// layer_type_validation). The caller applies it only to a class of the table. Why: transformers does no type check, and
/// Python would either fail later (a string where range() or `<` needs an int) or read it
/// by truthiness ("false" is true); the gate must never skip such a field and ACCEPT.
/// A null value means "absent" (transformers' None) except where the class has no None
/// default (rope_theta, rms_norm_eps, hidden_act, max_position_embeddings): there null is
/// refused too. Fields of foreign architectures are not checked: those are REJECTed anyway,
/// and their classification stays lenient.
void validate_gate_fields(const nlohmann::json& config);

}  // namespace llmport::detail
