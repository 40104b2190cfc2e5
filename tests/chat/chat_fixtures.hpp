#pragma once
// The chat entries of the shared tokenizer goldens (folders iterated, never listed), for the
// golden and the differential chat tests.
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace llmport::test {

using nlohmann::ordered_json;

struct ChatCase {
  std::filesystem::path dir;
  ordered_json entry;
  std::string name() const { return dir.filename().string() + "/" + entry.value("id", std::string("?")); }
};

/// A JSON file with its object keys in file order (the templates iterate messages' keys).
inline ordered_json read_ordered_json(const std::filesystem::path& p) { return ordered_json::parse(read_file(p)); }

/// Every chat entry of every shared tokenizers/*/golden.json, sorted by name.
inline std::vector<ChatCase> chat_cases() {
  std::vector<ChatCase> out;
  std::filesystem::path root = shared_path("tokenizers");
  for (const auto& d : std::filesystem::directory_iterator(root)) {
    std::filesystem::path g = d.path() / "golden.json";
    if (!std::filesystem::exists(g)) continue;
    ordered_json golden = read_ordered_json(g);
    if (!golden.contains("chat")) continue;
    for (const auto& e : golden["chat"]) out.push_back({d.path(), e});
  }
  std::sort(out.begin(), out.end(), [](const ChatCase& a, const ChatCase& b) { return a.name() < b.name(); });
  return out;
}

/// The template source a chat entry names: tokenizer_config.json's chat_template (a string,
/// or a list of {name, template} where "default" is used) or a .jinja file in the folder.
inline std::string template_of(const ChatCase& c) {
  std::string which = c.entry.at("template").get<std::string>();
  if (which != "tokenizer_config.json") return read_file(c.dir / which);
  ordered_json cfg = read_ordered_json(c.dir / "tokenizer_config.json");
  const auto& t = cfg.at("chat_template");
  if (t.is_string()) return t.get<std::string>();
  for (const auto& named : t)
    if (named.value("name", "") == "default") return named.at("template").get<std::string>();
  throw std::runtime_error("no default chat template in " + (c.dir / "tokenizer_config.json").string());
}

/// The template variables of an entry: its special_token_vars and extra_vars.
inline ordered_json vars_of(const ChatCase& c) {
  ordered_json vars = ordered_json::object();
  for (const char* key : {"special_token_vars", "extra_vars"})
    if (c.entry.contains(key))
      for (auto it = c.entry[key].begin(); it != c.entry[key].end(); ++it) vars[it.key()] = it.value();
  return vars;
}

}  // namespace llmport::test
