#include "cli/command.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "cli/error_wording.hpp"
#include "llmport/error.hpp"
#include "llmport/hub.hpp"

namespace llmport::cli {

std::vector<Command>& commands() {
  static std::vector<Command> c;
  return c;
}

namespace {

// `detokenize 1 2 --model M`: CLI11 gave the first id to the positional MODEL before it saw
// --model. For a command whose other words are free (IDS), that word is one of them: it
// moves to `leading` and MODEL is cleared, so "MODEL excludes --model" is not raised. A word
// naming an existing file or directory is a model, not an id: it stays, and MODEL with
// --model is refused as before.
void take_leading_word(CLI::Option& pos, std::vector<std::string>& leading) {
  if (pos.count() == 0) return;
  const std::string word = pos.results().front();
  std::error_code ec;
  if (std::filesystem::exists(word, ec)) return;
  leading.push_back(word);
  pos.clear();
}

}  // namespace

void add_model_arg(CLI::App& sub, std::string* out, bool required, std::vector<std::string>* leading) {
  auto* pos = sub.add_option("MODEL", *out, "model directory, config.json, or HF id org/name[@rev]");
  // Read as soon as it is parsed (trigger_on_parse), so the positional MODEL stops taking
  // words (expected 0) before the words after it are handed out: otherwise CLI11 gives the
  // first of them to MODEL and reports "MODEL excludes --model". CLI11 clears a
  // trigger_on_parse option when it is given again, so the repeat is refused here.
  auto given = std::make_shared<bool>(false);
  auto* alias = sub.add_option_function<std::string>(
                       "--model",
                       [out, pos, given, leading](const std::string& v) {
                         if (*given) throw CLI::ArgumentMismatch(duplicate_option_text("--model", "2"));
                         *given = true;
                         *out = v;
                         pos->expected(0, 1);
                         if (leading != nullptr) take_leading_word(*pos, *leading);
                       },
                       "alias of the positional MODEL")
                    ->trigger_on_parse();
  pos->excludes(alias);
  alias->excludes(pos);
  (void)required;  // checked after parse so both spellings are accepted
  // --offline goes through the environment, so every resolve_model call in the process honors it.
  if (!sub.get_option_no_throw("--offline")) {
    sub.add_flag_callback("--offline", [] { ::setenv("HF_HUB_OFFLINE", "1", 1); },
                          "never touch the network: use the Hugging Face cache only (as HF_HUB_OFFLINE=1)");
  }
}

std::vector<std::string> extra_args(const CLI::App& sub) {
  std::vector<std::string> out = sub.remaining();
  // CLI11 keeps the `--` it read while a positional was still open (`detokenize -- M 1`).
  if (auto it = std::find(out.begin(), out.end(), "--"); it != out.end()) out.erase(it);
  if (const CLI::App* root = sub.get_parent())
    for (const std::string& w : root->remaining()) out.push_back(w);
  return out;
}

std::string unexpected_args_text(const CLI::App& app) {
  const std::vector<std::string> left = app.remaining();
  const auto subs = app.get_subcommands();
  if (left.empty() || subs.empty() || subs.front()->get_allow_extras()) return {};
  std::string words;
  for (const std::string& w : left) words += (words.empty() ? "" : " ") + w;
  return std::string(left.size() == 1 ? "unexpected argument '" : "unexpected arguments '") + words + "'";
}

std::string resolve_model_dir(const std::string& model, bool config_only) {
  if (model.empty()) throw UsageError("MODEL is required (a model directory or org/name id)");
  ResolveOptions opt;
  opt.config_only = config_only;
  auto r = resolve_model(model, opt);
  return r.dir.string();
}

bool default_workspace_absent(const CLI::Option& ws_opt, const std::string& ws) {
  std::error_code ec;
  return ws_opt.count() == 0 && !std::filesystem::exists(std::filesystem::symlink_status(ws, ec));
}

}  // namespace llmport::cli
