#pragma once
// CLI11 validators with plain messages: CLI11's own PositiveNumber / Range print
// "Value 0 not in range 0.000000 to 1.797693e+308"; these say "must be >= 1, got 0".
// CLI11 prefixes the option name, so the user sees "--n-tokens: must be >= 1, got 0".
#include <CLI/CLI.hpp>

namespace llmport::cli {

/// Accepts a number >= min (help shows ">= min").
CLI::Validator at_least(double min);
/// Accepts a number > min (help shows "> min").
CLI::Validator above(double min);
/// Accepts a worker-thread count: 0 (all cores) .. max_backend_threads().
CLI::Validator thread_count();
/// Accepts a number in [lo, hi], or (lo, hi] when lo_open (help shows the interval).
CLI::Validator in_range(double lo, double hi, bool lo_open = false);

}  // namespace llmport::cli
