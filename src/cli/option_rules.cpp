#include "cli/option_rules.hpp"

#include <cmath>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace llmport::cli {
namespace {

// (command, option) pairs whose empty value is meaningful: run keeps --prompt and --system
// in std::optional, so "" is an empty prompt / an empty system turn, not "not given";
// `tokenize MODEL ""` prints the ids of the empty text ([] or the BOS).
bool empty_allowed(const CLI::App& app, const CLI::Option& o) {
  static const std::set<std::pair<std::string, std::string>> allowed = {
      {"run", "--prompt"}, {"run", "--system"}, {"tokenize", "TEXT"}};
  for (const auto& [cmd, name] : allowed)
    if (app.get_name() == cmd && o.check_name(name)) return true;
  return false;
}

const CLI::Validator& non_empty() {
  static const CLI::Validator v(
      [](std::string& s) { return s.empty() ? std::string("empty value") : std::string(); }, "", "NON_EMPTY");
  return v;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// CLI11's type names: INT, UINT, FLOAT (with a validator's description appended).
CLI::Validator number_check(bool whole, bool non_negative) {
  return CLI::Validator(
      [whole, non_negative](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        const bool parsed = !s.empty() && end == s.c_str() + s.size() && std::isfinite(v);
        if (whole && (!parsed || v != std::trunc(v) || s.find_first_of(".eE") != std::string::npos))
          return (non_negative ? "expects a whole number >= 0, got '" : "expects a whole number, got '") + s + "'";
        if (!parsed) return "expects a finite number, got '" + s + "'";
        if (non_negative && v < 0) return "expects a whole number >= 0, got '" + s + "'";
        return {};
      },
      "", "NUMBER");
}

void apply_to(CLI::App& app, CLI::Option& o) {
  if (o.get_expected_min() == 0) return;  // a flag: no value to check
  if (o.get_delimiter() != '\0')
    throw std::logic_error(o.get_name() + ": CLI11 delimiters drop empty elements; use comma_list()");
  const std::string type = o.get_type_name();
  if (starts_with(type, "UINT"))
    o.check(number_check(true, true));
  else if (starts_with(type, "INT"))
    o.check(number_check(true, false));
  else if (starts_with(type, "FLOAT"))
    o.check(number_check(false, false));
  else if (!empty_allowed(app, o))
    o.check(non_empty());
}

}  // namespace

void apply_option_rules(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) apply_to(app, *o);
  for (CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) apply_option_rules(*s);
}

}  // namespace llmport::cli
