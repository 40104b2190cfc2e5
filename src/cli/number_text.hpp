#pragma once
// How command-line text becomes a number, shared by the rules every numeric option follows
// (option_rules.hpp), the range checks (option_checks.hpp) and the comma lists of ids and
// thread counts, so "5", " 5", "0x10" and "99999999999999999999" mean the same thing (or are
// refused the same way) wherever a number is read.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmport::cli {

/// Outcome of reading a whole number.
enum class WholeParse {
  Ok,
  NotWhole,    ///< not base-10 digits with an optional leading '-' ("", " 5", "+5", "0x10", "1e3", "1.0")
  OutOfRange,  ///< well-formed but does not fit the type (the value is never clamped)
};

/// Reads `s` exactly (std::from_chars, no rounding through double: 2^64-1 and 2^64 differ).
WholeParse parse_int64(std::string_view s, std::int64_t& out);
WholeParse parse_uint64(std::string_view s, std::uint64_t& out);

/// "" when `s` is a whole number that fits int64 (or uint64 when `non_negative`), else the
/// message a usage error shows after the option name: "expects a whole number, got 'x'",
/// "expects a whole number >= 0, got '-1'", "18446744073709551616 is out of range".
std::string whole_number_error(const std::string& s, bool non_negative);

/// `s` as a finite double, or nullopt: refuses "", surrounding whitespace, hex ("0x10"),
/// inf and nan, which strtod would accept.
std::optional<double> parse_finite(const std::string& s);

}  // namespace llmport::cli
