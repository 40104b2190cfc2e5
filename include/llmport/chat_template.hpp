#pragma once
// HF chat templates: the subset of Jinja2 the Llama-3/3.1, Qwen2/3, Mistral and Gemma
// templates use, rendered with transformers' settings (ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks and loopcontrols; no trailing newline added; globals
// raise_exception and strftime_now; `tojson` = json.dumps(ensure_ascii=False)).
// Source of the semantics: transformers utils/chat_template_utils.py and Jinja2 3.1.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmport {

namespace jinja {
struct Program;
}
class Tokenizer;

/// A parsed chat template, reusable across renders (e.g. every turn of a chat).
///
/// Render variables, as transformers' apply_chat_template passes them: `messages`,
/// `add_generation_prompt`, `tools` = None and `documents` = None (unless `vars` gives
/// them), then every key of `vars` (bos_token, eos_token, enable_thinking, date_string...).
/// A JSON null in `vars` is Python None; a key left out is undefined in the template.
class ChatTemplate {
 public:
  /// Parses `source`. Throws ConfigError("chat template line N: ...") on a syntax error or
  /// an unsupported construct (statement, filter or test), naming it. `origin` (the file
  /// and field the source came from, Tokenizer::chat_template_origin()) leads every error
  /// message of the template, parse and render alike: "ORIGIN: chat template line N: ...".
  explicit ChatTemplate(const std::string& source, std::string origin = {});

  /// Renders the template. `messages`: JSON array of {role, content, ...} objects (object
  /// key order is kept, as Python dicts keep it, for `tojson`). `vars`: a JSON object or
  /// null. Throws UsageError for bad arguments, for the template's raise_exception(msg)
  /// (message included) and for render-time errors (undefined attribute, type error), and
  /// ConfigError for an unsupported construct met at render time (e.g. a string method this
  /// subset lacks); every message names the template line.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& vars = nullptr) const;
  /// Same with nlohmann::json (object keys then come in sorted order).
  std::string render(const nlohmann::json& messages, bool add_generation_prompt, const nlohmann::json& vars = nullptr) const;

 private:
  std::shared_ptr<const jinja::Program> program_;
  std::string origin_;
};

/// Renders a chat template once (parse + render); see ChatTemplate for the variables and
/// the errors thrown (ConfigError: unsupported or malformed construct; UsageError: a
/// template's raise_exception() with its message, render-time errors).
std::string render_chat_template(const std::string& tmpl, const nlohmann::json& messages,
                                 bool add_generation_prompt, const nlohmann::json& vars = {});
/// Same with insertion-ordered JSON (keeps the key order `tojson` prints).
std::string render_chat_template(const std::string& tmpl, const nlohmann::ordered_json& messages,
                                 bool add_generation_prompt, const nlohmann::ordered_json& vars);

// ---- instruct prompts (a tokenizer with a chat template) ----

/// Template variables from a tokenizer: bos_token / eos_token when it has them (as
/// transformers' special_tokens_map, an absent token is not passed at all).
nlohmann::ordered_json special_token_vars(const Tokenizer& tok);

/// Token ids of one instruct prompt: [system (when not empty)], user `prompt`, rendered
/// with the tokenizer's chat template and add_generation_prompt=true, encoded with
/// add_special_tokens=false (the template writes the BOS: exactly one). Throws UsageError
/// when the tokenizer has no chat template, plus ChatTemplate's errors.
std::vector<int> instruct_prompt_ids(const Tokenizer& tok, const std::string& system, const std::string& prompt);

/// Stop ids of an instruct model: `model_stop_ids` (config eos union generation_config eos,
/// ModelConfig::stop_ids()) plus the tokenizer's eos token id (e.g. Llama-3 Instruct
/// `<|eot_id|>`, Qwen `<|im_end|>`); sorted, unique.
std::vector<int> chat_stop_ids(const std::vector<int>& model_stop_ids, const Tokenizer& tok);

}  // namespace llmport
