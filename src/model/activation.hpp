#pragma once
// Which hidden_act strings name an architecture row's activation. The gate (compat.cpp) and
// config resolution (config.cpp) must agree: a config the gate ACCEPTs must resolve.
#include <string_view>

namespace llmport {

/// Whether config.json's hidden_act `act` is the row's activation `want`. transformers'
/// ACT2FN maps "swish" to the same SiLU module as "silu".
inline bool activation_matches(std::string_view act, std::string_view want) noexcept {
  return act == want || (want == "silu" && act == "swish");
}

}  // namespace llmport
