#pragma once
// HF chat templates: the subset of Jinja2 the Llama-3/3.1, Qwen2/3, Mistral and Gemma
// templates use, rendered with transformers' settings (trim_blocks, lstrip_blocks, no
// trailing newline added, raise_exception, tojson with ensure_ascii=False).
#include <string>

#include <nlohmann/json.hpp>

namespace llmport {

/// Renders a chat template.
/// `messages`: JSON array of {role, content} objects. `vars`: extra variables
/// (bos_token, eos_token, enable_thinking, ...). Throws ConfigError naming the template
/// construct that is unsupported or malformed, and UsageError with the message of a
/// template's raise_exception().
std::string render_chat_template(const std::string& tmpl, const nlohmann::json& messages,
                                 bool add_generation_prompt, const nlohmann::json& vars = {});

}  // namespace llmport
