// llmport command-line entry: dispatches to the registered subcommands and maps
// library errors to one line on stderr and the shared exit codes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/command.hpp"
#include "cli/error_wording.hpp"
#include "cli/option_rules.hpp"
#include "cli/version.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"

int main(int argc, char** argv) {
  using namespace llmport;
  // This process is the llmport executable: the children it spawns (phase 6's `make verify`,
  // phase 7's independent evaluator) are this binary, never a substitute named by
  // LLMPORT_EXE (that variable serves test programs that call the library directly).
  ::unsetenv("LLMPORT_EXE");
  CLI::App app{"llmport: bring a Hugging Face decoder-only LLM up on a compute target, "
               "verify it against a reference, make it fast, deploy it"};
  app.set_version_flag("--version", [] { return cli::version_text(); }, "version, build, ISA levels, data dir");
  app.require_subcommand(1);

  auto& cmds = cli::commands();
  std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::function<int()> run;
  for (auto& c : cmds) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    auto fn = c.setup(*sub);
    sub->callback([&run, fn] { run = fn; });
  }
  cli::apply_option_rules(app);
  // CLI11 2.1 hands the arguments after `--` back to this app once the subcommand's
  // positionals are full (`detokenize MODEL -- 1 2`): kept here (set after the subcommands,
  // which would inherit it) for the subcommand that takes extra words (cli::extra_args),
  // refused below for any other.
  app.allow_extras();
  // CLI11 reads an unknown first word as a missing subcommand ("A subcommand is required"):
  // name it instead.
  if (argc > 1 && argv[1][0] != '-' &&
      std::none_of(cmds.begin(), cmds.end(), [&](const auto& c) { return c.name == argv[1]; })) {
    std::cerr << "error: unknown command '" << printable(argv[1]) << "' (see llmport --help)\n";
    return kExitBadInput;
  }
  // The same one level down (`kernels bogus`), for a command that has subcommands.
  if (argc > 2 && argv[2][0] != '-') {
    const CLI::App* cmd = nullptr;
    try {
      cmd = app.get_subcommand(argv[1]);
    } catch (const CLI::OptionNotFound&) {  // a top-level option, not a command
    }
    std::vector<const CLI::App*> subs;
    if (cmd) subs = cmd->get_subcommands([](const CLI::App*) { return true; });
    if (!subs.empty() && std::none_of(subs.begin(), subs.end(), [&](const CLI::App* c) { return c->get_name() == argv[2]; })) {
      std::cerr << "error: unknown " << argv[1] << " subcommand '" << printable(argv[2]) << "' (expected "
                << cli::subcommand_names(*cmd) << "; see llmport " << argv[1] << " --help)\n";
      return kExitBadInput;
    }
  }
  // A subcommand's option before the subcommand (`llmport --json run M`): CLI11 would blame
  // the subcommand for an unexpected argument.
  const std::vector<std::string> words(argv + 1, argv + argc);
  // One line on stderr; `check --json` also answers on stdout with its JSON object.
  auto usage_error = [&](const std::string& text) {
    std::cerr << "error: " << printable(text) << "\n";
    cli::print_check_json_error(words, text, kExitBadInput);
    return kExitBadInput;
  };
  if (const std::string t = cli::misplaced_option_text(app, words); !t.empty())
    return usage_error(t + " (see llmport --help)");
  // An option's missing value followed by another option (`--svg --force`): CLI11 would
  // take the flag as the value and the command would write a file named "--force".
  std::string first_cmd = "llmport";
  if (argc > 1 && argv[1][0] != '-') first_cmd += std::string(" ") + argv[1];
  if (const std::string t = cli::option_as_value_text(app, words); !t.empty())
    return usage_error(t + " (see " + first_cmd + " --help)");
  if (const std::string t = cli::clustered_flag_text(app, words); !t.empty())
    return usage_error(t + " (see " + first_cmd + " --help)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  } catch (const CLI::ParseError& e) {
    // Same one-line shape as every other error, with where to look on the same line.
    std::string cmd = "llmport";
    for (const CLI::App* s : app.get_subcommands()) cmd += " " + s->get_name();
    return usage_error(cli::parse_error_text(e, app, words) + " (see " + cmd + " --help)");
  }
  if (const std::string left = cli::unexpected_args_text(app); !left.empty())
    return usage_error(left + " (see llmport " + app.get_subcommands().front()->get_name() + " --help)");
  try {
    return run ? run() : kExitBadInput;
  } catch (const Error& e) {
    // Messages may quote bytes of a damaged file: escaped, on one line.
    std::fflush(stdout);
    std::cerr << "error: " << printable(e.what()) << "\n";
    return e.exit_code();
  } catch (const std::filesystem::filesystem_error& e) {
    // A directory that cannot be made (--registry naming a file, -o through a dangling link).
    std::fflush(stdout);
    std::cerr << "error: " << printable(cli::filesystem_error_text(e)) << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "error: " << printable(e.what()) << "\n";
    return kExitBadInput;
  }
}
