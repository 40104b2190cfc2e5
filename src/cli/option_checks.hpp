#pragma once
// CLI11 validators with plain messages: CLI11's own PositiveNumber / Range print
// "Value 0 not in range 0.000000 to 1.797693e+308"; these say "must be >= 1, got 0".
// CLI11 prefixes the option name, so the user sees "--n-tokens: must be >= 1, got 0".
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace llmport::cli {

/// Accepts a number >= min (help shows ">= min").
CLI::Validator at_least(double min);
/// Accepts a number > min (help shows "> min").
CLI::Validator above(double min);
/// Accepts a worker-thread count: 0 (all cores) .. max_backend_threads().
CLI::Validator thread_count();
/// Accepts a whole number (number_text.hpp's rule) in lo..hi (help shows "lo..hi"):
/// "must be a whole number from 0 to 1048576, got 2000000".
CLI::Validator whole_in(std::int64_t lo, std::int64_t hi);
/// Accepts a number in [lo, hi], or (lo, hi] when lo_open (help shows the interval).
CLI::Validator in_range(double lo, double hi, bool lo_open = false);
/// Accepts "a,b,c" whose every element passes `element`; an empty element ("1,,2", "1,",
/// ",1") is refused naming it ("empty element 2 in '1,,2'"), an element that fails says
/// which ("element '99': must be ..."). CLI11's own delimiter drops empty elements before
/// any check runs, so comma lists are a string option with this check plus split_commas.
/// With Repeats::Refuse an element given twice is refused too ("1 given twice", compared as
/// whole numbers when both are: "1,01"): for lists where each element is one run (bench's
/// -t and -p), so a repeat would only run the same test again. Id lists allow repeats.
enum class Repeats { Allow, Refuse };
CLI::Validator comma_list(CLI::Validator element, Repeats repeats = Repeats::Allow);
/// Splits a list comma_list accepted into its elements.
std::vector<std::string> split_commas(const std::string& s);
/// Accepts a token id: a whole number (number_text.hpp's rule) in 0..2^31-1.
CLI::Validator token_id();
/// The ids of a JSON array ("[1, 2, 3]"), each an integer in 0..2^31-1. Throws UsageError
/// "<where>: element N (<value>) is not a token id (...)", N counting from 1 as in
/// comma_list's errors.
std::vector<int> json_token_ids(const nlohmann::json& array, const std::string& where);
/// The ids of a comma list "1,2,3" (comma_list(token_id()): no empty element, blanks around
/// an element ignored ("1, 2"), every element a whole number in range) or of one JSON array
/// "[1, 2, 3]" (json_token_ids), for the id lists of run/diagnosis --prompt-ids and
/// detokenize's IDS. Throws UsageError "<name>: <what is wrong>".
std::vector<int> parse_id_list(const std::string& s, const std::string& name);

}  // namespace llmport::cli
