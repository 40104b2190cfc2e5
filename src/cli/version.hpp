#pragma once
// The text of `llmport --version`.
#include <string>

namespace llmport::cli {

/// "llmport X.Y.Z" then one line each: git commit, compiler, build type, the cpu ISA
/// levels built in and those this machine runs, and the data directory in use (or why
/// there is none). No trailing newline.
std::string version_text();

}  // namespace llmport::cli
