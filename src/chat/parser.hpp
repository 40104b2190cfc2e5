#pragma once
// Jinja2 parser (the grammar and operator precedence of jinja2/parser.py) for the subset
// chat templates use. Unknown filters, tests and statements are rejected here, as Jinja2
// rejects unknown filters at compile time.
#include <string>

#include "chat/ast.hpp"

namespace llmport::jinja {

/// Parses template source. Throws ConfigError("chat template line N: ...") on a syntax
/// error or an unsupported construct (statement, filter, test), naming it.
Program parse(const std::string& source);

}  // namespace llmport::jinja
