#include "cli/number_text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <system_error>

namespace llmport::cli {
namespace {

template <class T>
WholeParse parse_whole(std::string_view s, T& out) {
  // from_chars takes '-' but neither '+' nor whitespace nor a base prefix; it reads "0x10" as
  // 0 followed by junk, which the end check refuses.
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out, 10);
  if (s.empty() || ptr != end) {
    // "99999999999999999999" overflows: from_chars stops with result_out_of_range at the end.
    if (ec == std::errc::result_out_of_range && ptr == end) return WholeParse::OutOfRange;
    return WholeParse::NotWhole;
  }
  if (ec == std::errc::result_out_of_range) return WholeParse::OutOfRange;
  if (ec != std::errc()) return WholeParse::NotWhole;
  return WholeParse::Ok;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

WholeParse parse_int64(std::string_view s, std::int64_t& out) { return parse_whole(s, out); }
WholeParse parse_uint64(std::string_view s, std::uint64_t& out) { return parse_whole(s, out); }

std::string whole_number_error(const std::string& s, bool non_negative) {
  WholeParse r;
  if (non_negative) {
    std::uint64_t v = 0;
    r = parse_uint64(s, v);
    if (r == WholeParse::NotWhole && s.size() > 1 && s[0] == '-' && all_digits(s.substr(1)))
      return "expects a whole number >= 0, got '" + s + "'";
  } else {
    std::int64_t v = 0;
    r = parse_int64(s, v);
  }
  if (r == WholeParse::OutOfRange) return s + " is out of range";
  if (r == WholeParse::NotWhole)
    return (non_negative ? "expects a whole number >= 0, got '" : "expects a whole number, got '") + s + "'";
  return {};
}

std::optional<double> parse_finite(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front())) ||
      s.find_first_of("xX") != std::string::npos)
    return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  // inf / nan are no setting's meaningful value (--temperature inf samples uniformly).
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace llmport::cli
