#pragma once
// The prompt text of a /v1/chat/completions request: its messages rendered by the model's
// chat template, with no message silently left out.
#include <string>

#include <nlohmann/json.hpp>

#include "llmport/chat_template.hpp"

namespace llmport::serve {

/// Renders `messages` (a JSON array of {role, content} objects, roles already checked
/// against OpenAI's list) with the generation prompt. Templates render the roles they
/// know and drop others without a word (Qwen3's drops `developer` and `function`), so a
/// message of role developer, tool or function whose content can change without changing
/// the rendering was dropped:
///  - developer: rendered as system instead (what OpenAI documents `developer` to be:
///    the system instructions of newer models);
///  - still dropped, or tool/function: ApiError 400 naming messages[i].role.
/// user, system and assistant turns are what every template renders. Template errors
/// pass through (llmport::Error; see ChatTemplate::render). Cost: one extra render per
/// developer, tool or function message.
std::string render_chat_prompt(const ChatTemplate& tmpl, nlohmann::ordered_json messages,
                               const nlohmann::ordered_json& vars);

}  // namespace llmport::serve
