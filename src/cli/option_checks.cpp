#include "cli/option_checks.hpp"

#include "cli/number_text.hpp"

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/kernels.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace llmport::cli {
CLI::Validator at_least(double min) {
  return CLI::Validator(
      [min](std::string& s) -> std::string {
        const auto v = parse_finite(s);
        if (!v) return fmt::format("expects a finite number, got '{}'", s);
        if (*v < min) return fmt::format("must be >= {}, got {}", min, s);
        return {};
      },
      fmt::format(">= {}", min));
}

CLI::Validator thread_count() {
  const int max = max_backend_threads();
  return CLI::Validator(
      [max](std::string& s) -> std::string {
        // A count: read as a whole number ("1e0" and "1.0" are not), like every other int.
        std::int64_t v = 0;
        const WholeParse r = parse_int64(s, v);
        if (r == WholeParse::NotWhole) return fmt::format("expects a whole number, got '{}'", s);
        if (r != WholeParse::Ok || v < 0 || v > max)
          return fmt::format("must be a whole number from 0 (all cores) to {} (4 x this machine's "
                             "hardware threads), got {}", max, s);
        return {};
      },
      fmt::format("0..{}", max));
}

CLI::Validator whole_in(std::int64_t lo, std::int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        std::int64_t v = 0;
        const WholeParse r = parse_int64(s, v);
        if (r == WholeParse::NotWhole) return fmt::format("expects a whole number, got '{}'", s);
        if (r != WholeParse::Ok || v < lo || v > hi)
          return fmt::format("must be a whole number from {} to {}, got {}", lo, hi, s);
        return {};
      },
      fmt::format("{}..{}", lo, hi));
}

CLI::Validator above(double min) {
  return CLI::Validator(
      [min](std::string& s) -> std::string {
        const auto v = parse_finite(s);
        if (!v) return fmt::format("expects a finite number, got '{}'", s);
        if (*v <= min) return fmt::format("must be > {}, got {}", min, s);
        return {};
      },
      fmt::format("> {}", min));
}

CLI::Validator in_range(double lo, double hi, bool lo_open) {
  const std::string interval = fmt::format("{}{}, {}]", lo_open ? "(" : "[", lo, hi);
  return CLI::Validator(
      [lo, hi, lo_open, interval](std::string& s) -> std::string {
        const auto v = parse_finite(s);
        if (!v) return fmt::format("expects a finite number, got '{}'", s);
        if ((lo_open ? *v <= lo : *v < lo) || *v > hi) return fmt::format("must be in {}, got {}", interval, s);
        return {};
      },
      "in " + interval);
}

// Elements with the blanks around them dropped: "1, 2" is what people type after Python's
// [1, 2]; a blank-only element is an empty one.
std::vector<std::string> split_commas(const std::string& s) {
  auto trimmed = [](std::string t) {
    const auto b = t.find_first_not_of(" \t");
    if (b == std::string::npos) return std::string();
    return t.substr(b, t.find_last_not_of(" \t") - b + 1);
  };
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(trimmed(s.substr(start, comma - start)));
  out.push_back(trimmed(s.substr(start)));
  return out;
}

namespace {

// The first element equal to an earlier one (as whole numbers when both read as one), else "".
std::string first_repeat(const std::vector<std::string>& items) {
  for (std::size_t i = 0; i < items.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      std::int64_t a = 0, b = 0;
      const bool numbers = parse_int64(items[i], a) == WholeParse::Ok && parse_int64(items[j], b) == WholeParse::Ok;
      if (numbers ? a == b : items[i] == items[j]) return items[i];
    }
  return {};
}

}  // namespace

CLI::Validator comma_list(CLI::Validator element, Repeats repeats) {
  const std::string desc = element.get_description();
  return CLI::Validator(
      [element, repeats](std::string& s) -> std::string {
        if (s.find_first_not_of(" \t") == std::string::npos) return std::string("empty value");
        const auto items = split_commas(s);
        for (std::size_t i = 0; i < items.size(); ++i) {
          std::string item = items[i];
          if (item.empty()) return fmt::format("empty element {} in '{}'", i + 1, s);
          if (std::string e = element(item); !e.empty())
            return items.size() == 1 ? e : fmt::format("element '{}': {}", items[i], e);
        }
        if (repeats == Repeats::Refuse)
          if (const std::string r = first_repeat(items); !r.empty())
            return fmt::format("{} given twice in '{}'; give each once", r, s);
        return {};
      },
      desc.empty() ? "comma list" : "comma list, each " + desc);
}

CLI::Validator token_id() {
  const std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  return CLI::Validator(
      [kMax](std::string& s) -> std::string {
        std::int64_t v = 0;
        const WholeParse r = parse_int64(s, v);
        if (r == WholeParse::NotWhole) return fmt::format("expects a token id (a whole number >= 0), got '{}'", s);
        if (r == WholeParse::OutOfRange || v < 0 || v > kMax)
          return fmt::format("token id {} is out of range (0..{})", s, kMax);
        return {};
      },
      "token id");
}

std::vector<int> json_token_ids(const nlohmann::json& array, const std::string& where) {
  std::vector<int> ids;
  for (std::size_t i = 0; i < array.size(); ++i) {
    try {
      ids.push_back(static_cast<int>(json_integer(array[i], "id", 0, std::numeric_limits<std::int32_t>::max())));
    } catch (const ConfigError&) {
      throw UsageError(fmt::format("{}: element {} ({}) is not a token id (an integer in [0, {}])", where, i + 1,
                                   json_excerpt(array[i]), std::numeric_limits<std::int32_t>::max()));
    }
  }
  return ids;
}

std::vector<int> parse_id_list(const std::string& s, const std::string& name) {
  if (const auto b = s.find_first_not_of(" \t"); b != std::string::npos && s[b] == '[') {
    nlohmann::json j;
    try {
      j = parse_json_text(s, name);
    } catch (const ConfigError&) {
      j = nullptr;  // reported below, naming the argument rather than the JSON parser's text
    }
    if (!j.is_array()) throw UsageError(name + ": '" + s + "' is not a JSON array of token ids");
    return json_token_ids(j, name);
  }
  std::string text = s;
  if (std::string e = comma_list(token_id())(text); !e.empty()) throw UsageError(name + ": " + e);
  std::vector<int> ids;
  for (const std::string& t : split_commas(s)) ids.push_back(static_cast<int>(std::stoll(t)));
  return ids;
}

}  // namespace llmport::cli
