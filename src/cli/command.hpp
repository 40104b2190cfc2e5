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
/// the value is in `*out`. MODEL is a model directory, a config.json path where the
/// command allows it, or an HF id org/name[@revision]. Also adds `--offline` (sets
/// HF_HUB_OFFLINE=1: the HF cache only, never the network).
void add_model_arg(CLI::App& sub, std::string* out, bool required = true);

/// Resolves MODEL through llmport::resolve_model (local path, HF cache, download) and
/// returns the model directory (or config.json path when given one).
std::string resolve_model_dir(const std::string& model, bool config_only = false);

}  // namespace llmport::cli
