#pragma once
// Subcommand registration: each src/cli/cmd_*.cpp registers itself with a static
// Registrar, so adding a command never touches main.cpp.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace llmport::cli {

/// A subcommand: `setup` adds options to `sub` and returns the function that runs it
/// (returning the process exit code).
struct Command {
  std::string name;
  std::string help;
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& commands();

struct Registrar {
  explicit Registrar(Command c) { commands().push_back(std::move(c)); }
};

/// Adds the positional MODEL argument and its `--model` alias to `sub`; after parsing,
/// the value is in `*out`. Once `--model` is read the positional MODEL takes no word, so
/// the command's other positionals read the words after it (`tokenize --model M TEXT`,
/// `detokenize --model M 1 2`); MODEL and --model together, or --model twice, are usage errors. MODEL is a model directory, a config.json path where the
/// command allows it, or an HF id org/name[@revision]. Also adds `--offline` (sets
/// HF_HUB_OFFLINE=1: the HF cache only, never the network).
/// `leading` (for a command whose other words are extra_args, detokenize's IDS): a word the
/// positional MODEL took before `--model` came (`detokenize 1 2 --model M`) is moved there,
/// the first of those words, unless it names an existing file or directory.
void add_model_arg(CLI::App& sub, std::string* out, bool required = true,
                   std::vector<std::string>* leading = nullptr);

/// The words CLI11 left unparsed for `sub` (a subcommand that allow_extras()), in
/// command-line order: its own, then those after `--` that CLI11 2.1 hands back to the root
/// app once `sub`'s positionals are full (`detokenize MODEL -- 1 2`). The `--` marker
/// itself is not among them (a second `--` after it is: a word like any other).
std::vector<std::string> extra_args(const CLI::App& sub);

/// "" when the root `app` kept no words after a successful parse, else the one-line error
/// ("unexpected argument 'x'", "unexpected arguments 'x y'"): words the root keeps
/// (arguments after `--`, an unknown option before the subcommand) belong to no command
/// unless the subcommand takes extra words.
std::string unexpected_args_text(const CLI::App& app);

/// Resolves MODEL through llmport::resolve_model (local path, HF cache, download) and
/// returns the model directory (or config.json path when given one).
std::string resolve_model_dir(const std::string& model, bool config_only = false);

/// True when `--workspace` (`ws_opt`) was not given and its default `ws` does not exist at
/// all: nothing was deployed here yet, which status and regress report as "no deployments"
/// (exit 0). A default that exists but is broken (a file, a dangling link) and a named
/// workspace that does not exist stay errors for the command to name.
bool default_workspace_absent(const CLI::Option& ws_opt, const std::string& ws);

/// `check --json` promises one JSON object on stdout in every case: when `args` (argv
/// without the program name) is a `check` command line holding `--json`, prints
/// {"verdict": "REJECT" (exit 3) | "ERROR", "error": `error`, "exit_code": `exit_code`} and
/// returns true; otherwise prints nothing and returns false. main() calls it for the
/// errors found before the command runs (unknown flags, a bad --max-seq value).
bool print_check_json_error(const std::vector<std::string>& args, const std::string& error, int exit_code);

}  // namespace llmport::cli
