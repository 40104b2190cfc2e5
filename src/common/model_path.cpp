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
  // A link is judged by the file it points at, whose directory is the model's.
  fs::path target = fs::is_symlink(path, ec) ? fs::canonical(path, ec) : path;
  if (ec || target.empty()) target = path;
  const std::string link = target == path ? "" : " (a link to " + target.string() + ")";
  const std::string name = target.filename().string();
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string what;
  if (target.extension() == ".safetensors") what = "is a safetensors weights file";
  else if (is_sidecar_json(name)) what = "is " + name + ", not the model's config";
  else if (target.extension() != ".json") what = "is not a config .json file";
  else return;
  throw ConfigError(path.string() + link + ": " + what + "; MODEL must be a model directory or its config.json (give its "
                    "directory: " + dir.string() + ")");
}

}  // namespace llmport
