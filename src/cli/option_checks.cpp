#include "cli/option_checks.hpp"

#include "llmport/kernels.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace llmport::cli {
namespace {

std::optional<double> as_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  // inf / nan are no setting's meaningful value (--temperature inf samples uniformly).
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

CLI::Validator at_least(double min) {
  return CLI::Validator(
      [min](std::string& s) -> std::string {
        const auto v = as_number(s);
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
        const auto v = as_number(s);
        if (!v) return fmt::format("expects a finite number, got '{}'", s);
        if (*v < 0 || *v > max || *v != static_cast<double>(static_cast<long>(*v)))
          return fmt::format("must be a whole number from 0 (all cores) to {} (4 x this machine's "
                             "hardware threads), got {}", max, s);
        return {};
      },
      fmt::format("0..{}", max));
}

CLI::Validator above(double min) {
  return CLI::Validator(
      [min](std::string& s) -> std::string {
        const auto v = as_number(s);
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
        const auto v = as_number(s);
        if (!v) return fmt::format("expects a finite number, got '{}'", s);
        if ((lo_open ? *v <= lo : *v < lo) || *v > hi) return fmt::format("must be in {}, got {}", interval, s);
        return {};
      },
      "in " + interval);
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(s.substr(start, comma - start));
  out.push_back(s.substr(start));
  return out;
}

CLI::Validator comma_list(CLI::Validator element) {
  const std::string desc = element.get_description();
  return CLI::Validator(
      [element](std::string& s) -> std::string {
        if (s.empty()) return std::string("empty value");
        const auto items = split_commas(s);
        for (std::size_t i = 0; i < items.size(); ++i) {
          std::string item = items[i];
          if (item.empty()) return fmt::format("empty element {} in '{}'", i + 1, s);
          if (std::string e = element(item); !e.empty())
            return items.size() == 1 ? e : fmt::format("element '{}': {}", items[i], e);
        }
        return {};
      },
      desc.empty() ? "comma list" : "comma list, each " + desc);
}

}  // namespace llmport::cli
