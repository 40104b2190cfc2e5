#include "hub/model_files.hpp"

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"

namespace llmport::hub {

const std::vector<std::string>& tokenizer_files() {
  static const std::vector<std::string> f = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                             "chat_template.jinja"};
  return f;
}

std::vector<std::string> index_shards(const std::filesystem::path& index_file) {
  const nlohmann::json j = parse_json_text(read_text_file(index_file), index_file.string(), JsonKeys::distinct);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw ConfigError(index_file.string() + ": weight_map: missing or not an object");
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : j["weight_map"].items()) {
    if (!shard.is_string()) throw ConfigError(index_file.string() + ": weight_map." + tensor + ": not a string");
    std::string s = shard.get<std::string>();
    std::filesystem::path p(s);
    bool escapes = s.empty() || p.is_absolute() || s.find('\\') != std::string::npos;
    for (const auto& part : p) escapes = escapes || part == "..";
    if (escapes) throw ConfigError(index_file.string() + ": weight_map." + tensor + ": bad shard path '" + s + "'");
    shards.insert(s);
  }
  if (shards.empty()) throw ConfigError(index_file.string() + ": weight_map: empty");
  return {shards.begin(), shards.end()};
}

}  // namespace llmport::hub
