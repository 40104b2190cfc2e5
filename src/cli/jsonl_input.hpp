#pragma once
// `--jsonl FILE` of tokenize / detokenize: one JSON value per line, from a file or '-'
// (stdin), read line by line so one tokenizer load serves the whole file.
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace llmport::cli {

/// Calls `each(value, where)` for every line of `path` ('-' = stdin) parsed as JSON, in
/// order; `where` is "PATH:LINE" for the caller's own errors. Throws UsageError for a
/// directory, a file that cannot be opened, or a line that is not JSON (naming PATH:LINE
/// and `expected`, e.g. "a JSON string").
void for_each_jsonl_line(const std::string& path, const std::string& expected,
                         const std::function<void(const nlohmann::json&, const std::string&)>& each);

}  // namespace llmport::cli
