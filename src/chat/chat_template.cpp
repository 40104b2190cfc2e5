#include "llmport/chat_template.hpp"

#include "chat/evaluator.hpp"
#include "chat/parser.hpp"
#include "chat/pyjson.hpp"
#include "llmport/error.hpp"

namespace llmport {

namespace {

// f(), its errors led by the template's origin ("" leaves them as they are).
template <class F>
auto with_origin(const std::string& origin, F&& f) -> decltype(f()) {
  if (origin.empty()) return f();
  try {
    return f();
  } catch (const UsageError& e) {
    throw UsageError(origin + ": " + e.what());
  } catch (const ConfigError& e) {
    throw ConfigError(origin + ": " + e.what());
  }
}

template <class Json>
std::string render_impl(const jinja::Program& p, const Json& messages, bool add_generation_prompt, const Json& vars) {
  if (!messages.is_array()) throw UsageError("chat messages must be a JSON array of {role, content} objects");
  if (!vars.is_null() && !vars.is_object()) throw UsageError("chat template variables must be a JSON object");
  std::vector<std::pair<std::string, jinja::Value>> v;
  v.emplace_back("messages", jinja::from_json(messages));
  v.emplace_back("tools", jinja::Value::none());
  v.emplace_back("documents", jinja::Value::none());
  v.emplace_back("add_generation_prompt", jinja::Value::boolean(add_generation_prompt));
  if (vars.is_object())
    for (auto it = vars.begin(); it != vars.end(); ++it) {
      jinja::Value x = jinja::from_json(it.value());
      bool replaced = false;
      for (auto& kv : v)
        if (kv.first == it.key()) {
          kv.second = x;
          replaced = true;
        }
      if (!replaced) v.emplace_back(it.key(), x);
    }
  return jinja::render(p, v);
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source, std::string origin)
    : program_(with_origin(origin, [&] { return std::make_shared<const jinja::Program>(jinja::parse(source)); })),
      origin_(std::move(origin)) {}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& vars) const {
  return with_origin(origin_, [&] { return render_impl(*program_, messages, add_generation_prompt, vars); });
}

std::string ChatTemplate::render(const nlohmann::json& messages, bool add_generation_prompt,
                                 const nlohmann::json& vars) const {
  return with_origin(origin_, [&] { return render_impl(*program_, messages, add_generation_prompt, vars); });
}

std::string render_chat_template(const std::string& tmpl, const nlohmann::json& messages, bool add_generation_prompt,
                                 const nlohmann::json& vars) {
  return ChatTemplate(tmpl).render(messages, add_generation_prompt, vars.is_null() ? nlohmann::json() : vars);
}

std::string render_chat_template(const std::string& tmpl, const nlohmann::ordered_json& messages,
                                 bool add_generation_prompt, const nlohmann::ordered_json& vars) {
  return ChatTemplate(tmpl).render(messages, add_generation_prompt, vars);
}

}  // namespace llmport
