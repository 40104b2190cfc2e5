#include "cli/option_rules.hpp"

#include "cli/number_text.hpp"

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
      [](std::string& s) {
        // " " is as much "not given" as "": a deployment named " ", an API key nobody can type.
        if (s.empty()) return std::string("empty value");
        if (s.find_first_not_of(" \t\n\r\f\v") == std::string::npos) return std::string("whitespace-only value");
        return std::string();
      },
      "", "NON_EMPTY");
  return v;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// CLI11's type names: INT, UINT, FLOAT (with a validator's description appended). Whole
// numbers are read exactly (number_text.hpp): a value past int64/uint64 is "out of range",
// never clamped; one that fits int64 but not the option's narrower type is left to CLI11's
// conversion, whose error main.cpp words the same way.
CLI::Validator number_check(bool whole, bool non_negative) {
  return CLI::Validator(
      [whole, non_negative](std::string& s) -> std::string {
        if (whole) return whole_number_error(s, non_negative);
        if (!parse_finite(s)) return "expects a finite number, got '" + s + "'";
        return {};
      },
      "", "NUMBER");
}

// CLI11 names a hidden option (group "") with an empty string, so its check errors read
// ": empty value". Each check of a hidden option puts the name in its own message instead;
// main.cpp drops the empty name CLI11 still puts in front.
void name_hidden_option_errors(CLI::Option& o) {
  if (!o.get_group().empty()) return;
  const std::string name = o.get_single_name().empty() ? std::string("?")
                           : o.get_lnames().empty() && o.get_snames().empty() ? o.get_single_name()
                           : (o.get_lnames().empty() ? "-" : "--") + o.get_single_name();
  for (int i = 0;; ++i) {
    CLI::Validator* v = nullptr;
    try {
      v = o.get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return;  // past the last check (CLI11 has no count of them)
    }
    CLI::Validator inner = *v;
    v->operation([inner, name](std::string& s) mutable {
      std::string e = inner(s);
      return e.empty() ? e : name + ": " + e;
    });
  }
}

void apply_to(CLI::App& app, CLI::Option& o) {
  if (o.get_expected_min() == 0) return;  // a flag: no value to check
  if (o.get_delimiter() != '\0')
    throw std::logic_error(o.get_single_name() + ": CLI11 delimiters drop empty elements; use comma_list()");
  const std::string type = o.get_type_name();
  // transform() puts the check first, before an option's own range check (at_least, ...), so
  // "abc" for a whole-number option says "expects a whole number", not "finite number".
  if (starts_with(type, "UINT"))
    o.transform(number_check(true, true));
  else if (starts_with(type, "INT"))
    o.transform(number_check(true, false));
  else if (starts_with(type, "FLOAT"))
    o.transform(number_check(false, false));
  else if (!empty_allowed(app, o))
    o.check(non_empty());
  name_hidden_option_errors(o);
}

}  // namespace

void apply_option_rules(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) apply_to(app, *o);
  for (CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) apply_option_rules(*s);
}

}  // namespace llmport::cli
