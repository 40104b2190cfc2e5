// `llmport chat-template MODEL --messages FILE.json [--add-generation-prompt]
//  [--var NAME=JSON ...] [--template FILE] [--ids]`: prints exactly what an instruct model
// is fed: the chat template rendered (no newline added), or with --ids its token ids as
// one JSON array (encoded with add_special_tokens=false: the template writes the BOS).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/tokenizer_dir.hpp"
#include "llmport/chat_template.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/tokenizer.hpp"

namespace llmport::cli {
namespace {

struct ChatTemplateArgs {
  std::string model;
  std::string messages;
  std::string template_file;
  std::vector<std::string> vars;
  bool add_generation_prompt = false;
  bool ids = false;
};

std::string read_text(const std::string& path, const char* flag) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  // read_text_file refuses a directory, a FIFO or an oversized file with one line naming it
  // (an ifstream on a directory "opens" and then fails with libstdc++'s underflow text).
  try {
    return read_text_file(path);
  } catch (const ConfigError& e) {
    throw UsageError(std::string(flag) + " " + printable(e.what()));
  }
}

nlohmann::ordered_json read_messages(const std::string& path) {
  nlohmann::ordered_json m;
  try {
    m = parse_ordered_json_text(read_text(path, "--messages"), "--messages " + path);
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  if (!m.is_array()) throw UsageError("--messages " + path + ": expected a JSON array of {role, content} objects");
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (!m[i].is_object() || !m[i].contains("role"))
      throw UsageError("--messages " + path + ": message " + std::to_string(i) + " is not a {role, content} object");
    // serve's rule (OpenAI's): content is required but for an assistant turn (which may carry
    // only tool calls); the two must render the same messages.
    const bool assistant = m[i]["role"].is_string() && m[i]["role"].get<std::string>() == "assistant";
    if (!assistant && (!m[i].contains("content") || m[i]["content"].is_null()))
      throw UsageError("--messages " + path + ": message " + std::to_string(i) + " has no content (required but for an "
                       "assistant turn)");
  }
  return m;
}

/// --var NAME=JSON, e.g. enable_thinking=false, date_string="\"26 Jul 2024\"". A NAME given
/// twice is refused (`given` holds the names seen): which value renders would be a guess.
void add_var(nlohmann::ordered_json& vars, const std::string& spec, std::set<std::string>& given) {
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageError("--var " + spec + ": expected NAME=JSON");
  std::string name = spec.substr(0, eq);
  // A template reads a variable by its identifier: "x " or " x" would be a variable no
  // template can name, silently unused.
  const bool identifier = (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                          std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
  if (!identifier)
    throw UsageError("--var " + spec + ": '" + name + "' is not a variable name (letters, digits and _, not first a digit)");
  if (!given.insert(name).second)
    throw UsageError("--var " + name + ": given twice; give each variable once");
  try {
    vars[name] = parse_ordered_json_text(spec.substr(eq + 1), "--var " + name);
  } catch (const ConfigError& e) {
    // The message names NAME, never echoes the whole (possibly huge) value.
    throw UsageError(std::string(e.what()) + " (the value must be JSON; write a string as \"\\\"text\\\"\")");
  }
}

// --template FILE with no template text is refused (as serve's --chat-template-file is):
// read as "no template" it would be reported as the tokenizer having none, or render "".
std::string read_template(const std::string& path) {
  std::string text = read_text(path, "--template");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw UsageError("--template " + path + ": empty file (expected a Jinja chat template)");
  return text;
}

int run_chat_template(const ChatTemplateArgs& a) {
  std::string dir = tokenizer_dir(a.model);
  std::unique_ptr<Tokenizer> tok;
  // A template given with --template renders without a tokenizer unless ids are wanted.
  if (a.template_file.empty() || a.ids || Tokenizer::exists(dir)) tok = Tokenizer::load(dir);
  std::string source = a.template_file.empty() ? tok->chat_template() : read_template(a.template_file);
  if (source.empty())
    throw UsageError(dir + ": the tokenizer has no chat_template (tokenizer_config.json or chat_template.jinja); "
                           "give one with --template FILE");
  nlohmann::ordered_json vars = tok ? special_token_vars(*tok) : nlohmann::ordered_json::object();
  std::set<std::string> given;
  for (const auto& v : a.vars) add_var(vars, v, given);
  const auto messages = read_messages(a.messages);
  // The template's own errors ("chat template line N: ...") name the file it came from.
  const std::filesystem::path jinja = std::filesystem::path(dir) / "chat_template.jinja";
  std::error_code ec;
  const std::string origin = !a.template_file.empty()          ? a.template_file
                             : std::filesystem::exists(jinja, ec) ? jinja.string()
                                                                 : (std::filesystem::path(dir) / "tokenizer_config.json").string();
  const std::string rendered = ChatTemplate(source, origin).render(messages, a.add_generation_prompt, vars);
  if (a.ids) {
    EncodeOptions opt;
    opt.add_special_tokens = false;
    std::cout << nlohmann::json(tok->encode(rendered, opt)).dump() << '\n';
  } else {
    std::cout << rendered << std::flush;
  }
  return kExitOk;
}

const Registrar reg{Command{
    "chat-template", "render the model's chat template for a conversation (exactly what the model is fed)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<ChatTemplateArgs>();
      add_model_arg(sub, &a->model);
      sub.add_option("--messages", a->messages, "JSON file ('-' = stdin): array of {role, content} objects")
          ->required();
      sub.add_flag("--add-generation-prompt", a->add_generation_prompt,
                   "end with the assistant header so the model answers");
      sub.add_option("--var", a->vars, "extra template variable NAME=JSON (e.g. enable_thinking=false); repeatable");
      sub.add_option("--template", a->template_file, "render this template file instead of the model's");
      sub.add_flag("--ids", a->ids, "print the token ids (add_special_tokens=false) as a JSON array");
      return [a] { return run_chat_template(*a); };
    }}};

}  // namespace
}  // namespace llmport::cli
