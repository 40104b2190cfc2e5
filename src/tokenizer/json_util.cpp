#include "llmport/error.hpp"
#include "tokenizer/components.hpp"
#include "tokenizer/regex.hpp"

namespace llmport::tok {

const json& require(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where + ": expected an object");
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) throw ConfigError(where + ": missing field '" + key + "'");
  return *it;
}

std::string get_string(const json& j, const char* key, const std::string& where, const std::string& dflt) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return dflt;
  if (!it->is_string()) throw ConfigError(where + ": field '" + key + "' must be a string");
  return it->get<std::string>();
}

bool get_bool(const json& j, const char* key, bool dflt) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return dflt;
  return it->get<bool>();
}

std::string pattern_to_regex(const json& pattern, const std::string& where) {
  if (pattern.is_object()) {
    if (auto it = pattern.find("String"); it != pattern.end() && it->is_string())
      return regex_escape(it->get<std::string>());
    if (auto it = pattern.find("Regex"); it != pattern.end() && it->is_string()) return it->get<std::string>();
  }
  if (pattern.is_string()) return regex_escape(pattern.get<std::string>());
  throw ConfigError(where + ": pattern must be {\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace llmport::tok
