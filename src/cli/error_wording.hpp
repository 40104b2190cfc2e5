#pragma once
// The project's one-line wording for errors that come from CLI11 or the standard library
// rather than from llmport's own checks, so no raw library text reaches the user.
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace llmport::cli {

/// The message of a CLI11 parse error, without the "error: " prefix or help hint. `app` is
/// the root app after the failed parse (it names the option whose value was refused):
/// - a ConversionError ("Could not convert: --n-tokens = 2147483648", a value past the
///   option's type) becomes out_of_range_text ("--n-tokens: 2147483648 is out of range"),
///   the same words option_rules.hpp uses past int64; for a flag ("--json=maybe") it says
///   "--json: a flag takes no value (or true/false), got 'maybe'";
/// - "--seed: At Most 1 required but received 2" becomes duplicate_option_text;
/// - the empty name CLI11 gives a hidden option (": msg") is dropped;
/// - "NAME: 1 required TEXT missing" (an option without its value) becomes "NAME: expected a
///   value (TEXT)"; for a hidden option (CLI11 names it "") NAME is read from `args`;
/// - "A excludes B" becomes "A and B cannot be given together: give one of them";
/// - "A subcommand is required" for a command that has subcommands (`llmport kernels`)
///   becomes "missing kernels subcommand (expected list, validate, ...)";
/// - "The following argument was not expected: W" becomes "unknown option 'W'" for a word
///   that looks like an option (not after `--`), else "unexpected argument(s) '...'", the
///   words in the order of `args` (the command line after the program name).
std::string parse_error_text(const CLI::ParseError& e, const CLI::App& app,
                             const std::vector<std::string>& args = {});

/// The names of `cmd`'s subcommands, ", "-separated ("list, validate, sweep, probe").
std::string subcommand_names(const CLI::App& cmd);

/// "" unless an option of the subcommand is given before it (`llmport --json run M`, which
/// CLI11 reports as an unexpected argument of `run`): then "--json is an option of 'run':
/// put it after the subcommand", or "unknown option '--x' before
/// the subcommand 'run'" when `run` has no such option. `app` is the root app, `args` the
/// command line after the program name; root options (--help, --version) are fine there.
std::string misplaced_option_text(const CLI::App& app, const std::vector<std::string>& args);

/// "" unless an option that takes a value is followed by another option of the same command
/// (`--kernel-cache --no-roofline`): CLI11 takes any next word as the value, so the run went
/// on and wrote a file or directory named after the flag. Then "--kernel-cache: expected a
/// value, got the option --no-roofline (write --kernel-cache=VALUE for a value that starts
/// with '-')"; a short option's hint names its long form (`-o`: `--out=VALUE`), or the
/// attached `-oVALUE` where it has none (CLI11 keeps the '=' of `-o=V` in the value). `app` is the root app, `args` the command line after the program name; words
/// after `--` are arguments, and a value given as `--opt=VALUE` is never questioned.
std::string option_as_value_text(const CLI::App& app, const std::vector<std::string>& args);

/// "" unless a word starts with one dash and goes on, and its first letter is a flag or no
/// option at all (`tokenize M -hello`): CLI11 reads it as a cluster of short flags, and the
/// `-h` in it printed the help and exited 0 instead of tokenizing. Then "unknown option '-hello': put an argument that starts with
/// '-' after '--'". An attached value of a short option that takes one
/// (`-n5`), negative numbers and words after `--` are fine. Arguments as for
/// option_as_value_text.
std::string clustered_flag_text(const CLI::App& app, const std::vector<std::string>& args);

/// "NAME: VALUE is out of range": the one wording of a number too big (or small) for its option.
std::string out_of_range_text(const std::string& name, const std::string& value);

/// "NAME: given TIMES times; it takes one value, give it once": a one-value option repeated.
std::string duplicate_option_text(const std::string& name, const std::string& times);

/// "PATH: cannot create directory (REASON)" style text for a filesystem_error: the
/// operation CLI-worded, path1 and the OS reason, never "filesystem error: ...".
std::string filesystem_error_text(const std::filesystem::filesystem_error& e);

}  // namespace llmport::cli
