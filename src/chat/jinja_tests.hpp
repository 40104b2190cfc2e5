#pragma once
// Jinja2 builtin tests (`x is defined`, `x is string`...; jinja2/tests.py semantics).
#include <string>

#include "chat/value.hpp"

namespace llmport::jinja {

/// Whether `name` is a test this subset implements.
bool has_test(const std::string& name);
/// Runs test `name` on `v` with extra arguments (`x is divisibleby(3)`).
bool apply_test(const std::string& name, const Value& v, const CallArgs& args);

}  // namespace llmport::jinja
