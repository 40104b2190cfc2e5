#pragma once
// Errors raised while lexing, parsing or rendering a template. They carry no line; the
// parser/evaluator add "chat template line N:" and turn them into llmport's typed errors
// (ConfigError for syntax and unsupported constructs, UsageError at render time).
#include <stdexcept>
#include <string>

namespace llmport::jinja {

/// A construct this Jinja subset does not implement (filter, test, statement, method...).
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// What Jinja2 would raise at render time: UndefinedError, TypeError, ZeroDivisionError...
struct RenderError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// raise_exception(message) called by the template.
struct Raised : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace llmport::jinja
