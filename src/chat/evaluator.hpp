#pragma once
// Renders a parsed template: statements write to the output, expressions evaluate with
// Python semantics. Scoping as Jinja2: a for-loop iteration and a macro call get their own
// scope (a `set` there does not leak out, hence namespace()); `if` blocks do not.
#include <string>
#include <utility>
#include <vector>

#include "chat/ast.hpp"

namespace llmport::jinja {

/// Renders `program` with the given top-level variables (name, value) and returns the
/// output. Throws ConfigError (unsupported construct met at render time) or UsageError
/// (raise_exception, undefined attribute, type error), each naming the template line.
std::string render(const Program& program, const std::vector<std::pair<std::string, Value>>& vars);

}  // namespace llmport::jinja
