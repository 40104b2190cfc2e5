#include "llmport/model_path.hpp"

#include <array>
#include <string>
#include <string_view>

#include "llmport/error.hpp"

namespace llmport {
namespace fs = std::filesystem;

namespace {

// The JSON files of a model directory that are not its config.
bool is_sidecar_json(const std::string& name) {
  static constexpr std::array<std::string_view, 4> names = {"tokenizer.json", "tokenizer_config.json",
                                                            "generation_config.json", "special_tokens_map.json"};
  for (std::string_view n : names)
    if (name == n) return true;
  return name.ends_with(".index.json");
}

}  // namespace

void check_model_path(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return;
  const std::string name = path.filename().string();
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::string what;
  if (path.extension() == ".safetensors") what = "is a safetensors weights file";
  else if (is_sidecar_json(name)) what = "is " + name + ", not the model's config";
  else if (path.extension() != ".json") what = "is not a JSON file";
  else return;
  throw ConfigError(path.string() + ": " + what + "; MODEL must be a model directory or its config.json (give its "
                    "directory: " + dir.string() + ")");
}

}  // namespace llmport
