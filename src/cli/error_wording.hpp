#pragma once
// The project's one-line wording for errors that come from CLI11 or the standard library
// rather than from llmport's own checks, so no raw library text reaches the user.
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

namespace llmport::cli {

/// The message of a CLI11 parse error, without the "error: " prefix or help hint:
/// a ConversionError ("Could not convert: --n-tokens = 2147483648", a value past the
/// option's type) becomes "--n-tokens: expects a whole number in range, got '2147483648'";
/// the empty name CLI11 gives a hidden option (": msg") is dropped.
std::string parse_error_text(const CLI::ParseError& e);

/// "PATH: cannot create directory (REASON)" style text for a filesystem_error: the
/// operation CLI-worded, path1 and the OS reason, never "filesystem error: ...".
std::string filesystem_error_text(const std::filesystem::filesystem_error& e);

}  // namespace llmport::cli
