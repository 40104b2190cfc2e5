#include "serve/chat_prompt.hpp"

#include "llmport/error.hpp"
#include "serve/api_error.hpp"

namespace llmport::serve {
namespace {

using ojson = nlohmann::ordered_json;

bool checked_role(const std::string& role) { return role == "developer" || role == "tool" || role == "function"; }

// True when the template's rendering of `messages` does not depend on message i's content:
// another content leaves it unchanged. (Removing the message instead changes the turn
// structure: Qwen3's template raises on an empty list.) A rendering that fails with the
// other content read it.
bool dropped(const ChatTemplate& tmpl, ojson messages, std::size_t i, const std::string& with, const ojson& vars) {
  const ojson& c = messages[i]["content"];
  messages[i]["content"] = "llmport probe " + (c.is_string() ? c.get<std::string>() : std::string());
  try {
    return tmpl.render(messages, true, vars) == with;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

std::string render_chat_prompt(const ChatTemplate& tmpl, ojson messages, const ojson& vars) {
  std::string text = tmpl.render(messages, true, vars);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string role = messages[i].at("role").get<std::string>();
    if (!checked_role(role) || !dropped(tmpl, messages, i, text, vars)) continue;
    if (role == "developer") {
      messages[i]["role"] = "system";
      text = tmpl.render(messages, true, vars);
      if (!dropped(tmpl, messages, i, text, vars)) continue;
    }
    throw ApiError(400,
                   "this model's chat template does not render role '" + role +
                       "' (the message would be left out of the prompt)",
                   "messages[" + std::to_string(i) + "].role");
  }
  return text;
}

}  // namespace llmport::serve
