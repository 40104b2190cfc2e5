#pragma once
// Rules every option of every subcommand follows, applied once to the whole command tree
// (main.cpp) instead of option by option, so a new option cannot miss them.
#include <CLI/CLI.hpp>

namespace llmport::cli {

/// Walks `app` and its subcommands (nested ones too) and adds to each value-taking option:
/// - an empty or whitespace-only value is a usage error ("--kernel-cache: empty value",
///   "whitespace-only value"): most string options
///   read "" as "not given" and would silently run something else than asked. The few
///   whose empty value means something (run's --prompt "" / --system "", tokenize's
///   TEXT "") are exempt.
/// - a numeric option (INT / UINT / FLOAT) that does not parse says "expects a whole
///   number, got 'abc'" / "expects a finite number, got 'abc'" like the range checks of
///   option_checks.hpp, instead of CLI11's "Could not convert: --x = abc". Whole numbers
///   are read exactly (number_text.hpp): past int64/uint64 is "<v> is out of range".
///   This check runs before an option's own checks.
/// - a hidden option (group "") names itself in its check errors (CLI11 names it "").
/// Throws std::logic_error for an option with a CLI11 delimiter: CLI11 drops the empty
/// elements of "1,,2" before any check sees them; comma lists use comma_list() instead.
void apply_option_rules(CLI::App& app);

}  // namespace llmport::cli
