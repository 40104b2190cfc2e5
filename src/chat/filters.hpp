#pragma once
// Jinja2 builtin filters (jinja2/filters.py semantics) used by chat templates, plus
// transformers' own `tojson`. Filters outside this set are rejected when the template is
// parsed (has_filter), as Jinja2 rejects unknown filters at compile time.
#include <string>

#include "chat/value.hpp"

namespace llmport::jinja {

/// Whether `name` is a filter this subset implements.
bool has_filter(const std::string& name);
/// Applies filter `name` to `v` with the call's extra arguments. Throws RenderError as
/// Jinja2 would (bad types, undefined where one is not allowed).
Value apply_filter(const std::string& name, const Value& v, const CallArgs& args);

}  // namespace llmport::jinja
