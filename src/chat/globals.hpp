#pragma once
// Global names a chat template can call: Jinja2's range, dict, namespace, cycler, joiner,
// and transformers' raise_exception and strftime_now.
#include <string>
#include <unordered_map>

#include "chat/value.hpp"

namespace llmport::jinja {

/// Name -> callable value, shared by every render.
const std::unordered_map<std::string, Value>& global_functions();

}  // namespace llmport::jinja
