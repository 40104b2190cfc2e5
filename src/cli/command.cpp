#include "cli/command.hpp"

#include <cstdlib>
#include <filesystem>

#include "llmport/error.hpp"
#include "llmport/hub.hpp"

namespace llmport::cli {

std::vector<Command>& commands() {
  static std::vector<Command> c;
  return c;
}

void add_model_arg(CLI::App& sub, std::string* out, bool required) {
  auto* pos = sub.add_option("MODEL", *out, "model directory, config.json, or HF id org/name[@rev]");
  auto* alias = sub.add_option("--model", *out, "alias of the positional MODEL");
  pos->excludes(alias);
  alias->excludes(pos);
  (void)required;  // checked after parse so both spellings are accepted
  // --offline goes through the environment, so every resolve_model call in the process honors it.
  if (!sub.get_option_no_throw("--offline")) {
    sub.add_flag_callback("--offline", [] { ::setenv("HF_HUB_OFFLINE", "1", 1); },
                          "never touch the network: use the Hugging Face cache only (as HF_HUB_OFFLINE=1)");
  }
}

std::string resolve_model_dir(const std::string& model, bool config_only) {
  if (model.empty()) throw UsageError("MODEL is required (a model directory or org/name id)");
  ResolveOptions opt;
  opt.config_only = config_only;
  auto r = resolve_model(model, opt);
  return r.dir.string();
}

}  // namespace llmport::cli
