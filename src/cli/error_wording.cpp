#include "cli/error_wording.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

namespace llmport::cli {
namespace {

// The option called `name` in the subcommand being parsed (the deepest one given), else in
// `app` itself; nullptr when there is none (a name CLI11 made up).
const CLI::Option* find_option(const CLI::App& app, const std::string& name) {
  for (const CLI::App* s : app.get_subcommands())
    if (const CLI::Option* o = find_option(*s, name)) return o;
  return app.get_option_no_throw(name);
}

// CLI11's "Could not convert: NAME = VALUE" (the only place NAME and VALUE are kept). The
// value of a flag is the flag's on/off; any other option's value was read as a number by
// option_rules.hpp already, so what is left is a number past the option's own type.
std::string conversion_text(const std::string& msg, const CLI::App& app) {
  constexpr std::string_view prefix = "Could not convert: ";
  const std::size_t eq = msg.find(" = ");
  if (msg.rfind(prefix, 0) != 0 || eq == std::string::npos) return "a value could not be converted (" + msg + ")";
  const std::string name = msg.substr(prefix.size(), eq - prefix.size());
  const std::string value = msg.substr(eq + 3);
  const std::string shown = name.empty() ? std::string("value") : name;
  const CLI::Option* o = name.empty() ? nullptr : find_option(app, name);
  if (o != nullptr && o->get_expected_min() == 0)
    return shown + ": a flag takes no value (or true/false), got '" + value + "'";
  return out_of_range_text(shown, value);
}

// CLI11's "NAME: At Most N required but received M": more values than the option takes,
// which for a one-value option means it was given M times.
std::string at_most_text(const std::string& msg) {
  constexpr std::string_view marker = ": At Most ";
  const std::size_t at = msg.find(marker);
  const std::size_t rec = msg.find(" required but received ");
  if (at == std::string::npos || rec == std::string::npos || rec < at) return msg;
  const std::string name = msg.substr(0, at);
  const std::string most = msg.substr(at + marker.size(), rec - at - marker.size());
  const std::string got = msg.substr(rec + std::string_view(" required but received ").size());
  if (most == "1") return duplicate_option_text(name, got);
  return name + ": takes at most " + most + " values, got " + got;
}

// CLI11's "The following argument(s) were not expected: W ..." in llmport's words: the first
// word that looks like an option is an unknown option, else the words are unexpected
// arguments. CLI11 lists them in parse order or reversed, by path, and may keep a "--":
// they are put back in command-line order (`args`, the words after the program name).
std::string extras_text(const std::string& msg, const std::vector<std::string>& args) {
  const std::size_t colon = msg.find(": ");
  if (colon == std::string::npos) return msg;
  std::vector<std::string> words;
  std::string w;
  for (char c : msg.substr(colon + 2) + " ") {
    if (c != ' ') {
      w += c;
      continue;
    }
    if (!w.empty() && w != "--") words.push_back(w);
    w.clear();
  }
  const auto dd = std::find(args.begin(), args.end(), "--");
  auto at = [&](const std::string& x) { return std::find(args.begin(), args.end(), x) - args.begin(); };
  std::stable_sort(words.begin(), words.end(), [&](const auto& a, const auto& b) { return at(a) < at(b); });
  for (const std::string& x : words) {
    const bool after_dd = dd != args.end() && at(x) > dd - args.begin();  // an argument, whatever it looks like
    if (!after_dd && x.size() > 1 && x[0] == '-' && !(std::isdigit(static_cast<unsigned char>(x[1])) || x[1] == '.'))
      return "unknown option '" + x.substr(0, x.find('=')) + "'";
  }
  if (words.empty()) return "unexpected argument '--'";
  std::string joined;
  for (const std::string& x : words) joined += (joined.empty() ? "" : " ") + x;
  return std::string(words.size() == 1 ? "unexpected argument '" : "unexpected arguments '") + joined + "'";
}

// The option a hidden option's "missing value" error is about: CLI11 names a hidden option
// (group "") with "", so the option is found on the command line instead: the last word,
// when it names a hidden option of the parsed subcommand: CLI11 takes the next word as the
// value whatever it looks like, so only the last word can lack one.
std::string hidden_option_missing_value(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.empty()) return {};
  const std::string& w = args.back();
  if (w.size() < 2 || w[0] != '-' || w.find('=') != std::string::npos) return {};
  const CLI::Option* o = find_option(app, w);
  return o != nullptr && o->get_group().empty() ? w : std::string();
}

// CLI11's "NAME: N required TYPE missing" (an option given without its value) in llmport's
// words, for hidden options too: "--inject-fault: expected a value (TEXT)".
std::string missing_value_text(const std::string& msg, const CLI::App& app, const std::vector<std::string>& args) {
  constexpr std::string_view mid = " required ";
  const std::size_t colon = msg.find(": ");
  const std::size_t req = msg.find(mid);
  if (colon == std::string::npos || req == std::string::npos || req < colon || !msg.ends_with(" missing")) return msg;
  std::string name = msg.substr(0, colon);
  if (name.empty()) name = hidden_option_missing_value(app, args);
  if (name.empty()) name = "an option";
  const std::string num = msg.substr(colon + 2, req - colon - 2);
  const std::string type = msg.substr(req + mid.size(), msg.size() - req - mid.size() - 8);
  const std::string what = num == "1" ? "a value" : num + " values";
  return name + ": expected " + what + (type.empty() ? std::string() : " (" + type + ")");
}

// CLI11's "A excludes B": two options that cannot be given together.
std::string excludes_text(const std::string& msg) {
  const std::size_t at = msg.find(" excludes ");
  if (at == std::string::npos) return msg;
  return msg.substr(0, at) + " and " + msg.substr(at + 10) + " cannot be given together: give one of them";
}

}  // namespace

std::string subcommand_names(const CLI::App& cmd) {
  std::string names;
  // Only what --help lists: a command in no group (`evaluate`, phase 7's
  // internal evaluator) is hidden there and here.
  for (const CLI::App* c : cmd.get_subcommands([](const CLI::App*) { return true; }))
    if (!c->get_group().empty()) names += (names.empty() ? "" : ", ") + c->get_name();
  return names;
}

std::string misplaced_option_text(const CLI::App& app, const std::vector<std::string>& args) {
  for (const std::string& w : args) {
    if (w == "--") return {};
    if (w.empty() || w[0] != '-') {
      // The first word that names a subcommand (a word before it may be an option's value:
      // `--n-tokens 3 run M`).
      const CLI::App* cmd = nullptr;
      try {
        cmd = app.get_subcommand(w);
      } catch (const CLI::OptionNotFound&) {
        continue;
      }
      for (const std::string& o : args) {
        if (&o == &w || o == "--") break;  // after `--` every word is an argument
        const std::string name = o.substr(0, o.find('='));
        if (name.size() < 2 || name[0] != '-' || app.get_option_no_throw(name) != nullptr) continue;
        if (cmd->get_option_no_throw(name) != nullptr)
          return name + " is an option of '" + w + "': put it after the subcommand";
        return "unknown option '" + name + "' before the subcommand '" + w + "'";
      }
      return {};
    }
  }
  return {};
}

namespace {
// The option `word` names in `cmd` or the root app (nullptr for none or a non-option word).
const CLI::Option* option_named(const CLI::App& app, const CLI::App& cmd, const std::string& word) {
  if (word.size() < 2 || word[0] != '-' || word == "--") return nullptr;
  const std::string name = word.substr(0, word.find('='));
  if (const CLI::Option* o = cmd.get_option_no_throw(name)) return o;
  return app.get_option_no_throw(name);
}
}  // namespace

namespace {
bool takes_value(const CLI::Option* o) { return o && o->get_type_size_min() > 0 && o->get_expected_min() > 0; }

// Calls f(cmd, i) for every word args[i] before `--` that starts with '-', `cmd` being the
// (sub)command it belongs to; returns the first text f returns ("" to go on). A word that
// names an option taking a separate value skips that value, whatever it looks like.
template <class F>
std::string scan_option_words(const CLI::App& app, const std::vector<std::string>& args, F&& f) {
  const CLI::App* cmd = &app;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w == "--") break;
    if (w.empty() || w[0] != '-') {  // a subcommand descends; any other word is an argument
      try {
        cmd = cmd->get_subcommand(w);
      } catch (const CLI::OptionNotFound&) {
      }
      continue;
    }
    if (std::string t = f(*cmd, i); !t.empty()) return t;
    if (w.find('=') == std::string::npos && takes_value(option_named(app, *cmd, w))) ++i;
  }
  return {};
}
}  // namespace

std::string option_as_value_text(const CLI::App& app, const std::vector<std::string>& args) {
  return scan_option_words(app, args, [&](const CLI::App& cmd, std::size_t i) -> std::string {
    const std::string& w = args[i];
    const CLI::Option* o = option_named(app, cmd, w);
    if (w.find('=') != std::string::npos || !takes_value(o)) return {};
    if (i + 1 >= args.size() || args[i + 1] == "--" || !option_named(app, cmd, args[i + 1])) return {};
    // CLI11 keeps the '=' of a short option's "-o=V" in the value: the hint names the long
    // form where there is one, else the attached "-oVALUE".
    const std::string form = !o->get_lnames().empty() ? "--" + o->get_lnames().front() + "=VALUE"
                             : w.size() == 2        ? w + "VALUE"
                                                    : w + "=VALUE";
    return w + ": expected a value, got the option " + args[i + 1].substr(0, args[i + 1].find('=')) + " (write " +
           form + " for a value that starts with '-')";
  });
}

std::string clustered_flag_text(const CLI::App& app, const std::vector<std::string>& args) {
  return scan_option_words(app, args, [&](const CLI::App& cmd, std::size_t i) -> std::string {
    const std::string& w = args[i];
    const bool single_dash_word = w.size() > 2 && w[1] != '-' && w[2] != '=' &&
                                  !std::isdigit(static_cast<unsigned char>(w[1])) && w[1] != '.';
    // `-n5` is -n with its value attached; `-hello` is no option CLI11 should see.
    if (single_dash_word && !takes_value(option_named(app, cmd, w.substr(0, 2))))
      return "unknown option '" + w + "': put an argument that starts with '-' after '--'";
    return {};
  });
}

std::string out_of_range_text(const std::string& name, const std::string& value) {
  return name + ": " + value + " is out of range";
}

std::string duplicate_option_text(const std::string& name, const std::string& times) {
  return name + ": given " + times + " times; it takes one value, give it once";
}

std::string parse_error_text(const CLI::ParseError& e, const CLI::App& app, const std::vector<std::string>& args) {
  std::string msg = e.what();
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) return conversion_text(msg, app);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr)
    return missing_value_text(at_most_text(msg), app, args);
  if (dynamic_cast<const CLI::ExcludesError*>(&e) != nullptr) return excludes_text(msg);
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && msg == "A subcommand is required") {
    // `llmport kernels` alone: which subcommands there are, as for an unknown one.
    for (const CLI::App* s : app.get_subcommands())
      if (const std::string names = subcommand_names(*s); !names.empty())
        return "missing " + s->get_name() + " subcommand (expected " + names + ")";
    // `llmport` alone: the same for the top level; `llmport --bogus`: no command's option
    // either (a command's option before its command is caught earlier), so it is named.
    if (app.get_subcommands().empty()) {
      if (!args.empty() && args.front().size() > 1 && args.front()[0] == '-')
        return "unknown option '" + args.front().substr(0, args.front().find('=')) + "' (expected a command first: " +
               subcommand_names(app) + ")";
      return "missing subcommand (expected " + subcommand_names(app) + ")";
    }
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) return extras_text(msg, args);
  if (msg.rfind(": ", 0) == 0) msg.erase(0, 2);
  return msg;
}

std::string filesystem_error_text(const std::filesystem::filesystem_error& e) {
  const std::string what = e.what();
  std::string op = "cannot access";
  if (what.find("create dir") != std::string::npos) op = "cannot create directory";
  else if (what.find("copy") != std::string::npos) op = "cannot copy";
  else if (what.find("remove") != std::string::npos) op = "cannot remove";
  else if (what.find("rename") != std::string::npos) op = "cannot rename";
  const std::string path = e.path1().empty() ? std::string("(no path)") : e.path1().string();
  return path + ": " + op + " (" + e.code().message() + ")";
}

}  // namespace llmport::cli
