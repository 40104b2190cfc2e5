// Prompt files: the built-in base/instruct sets (data/prompts) and --prompts FILE.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "llmport/error.hpp"
#include "llmport/verify.hpp"
#include "verify/json_field.hpp"

namespace llmport {

std::vector<PromptSpec> read_prompt_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string() + ": cannot open prompt file");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(file.string() + ": malformed JSON: " + e.what());
  }
  verify_detail::JsonField root(j, file, "");
  verify_detail::JsonField list = j.is_object() ? root.at("prompts") : root;
  std::vector<PromptSpec> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto f = list.at(i);
    PromptSpec p;
    p.name = "prompt" + std::to_string(i);
    if (f.raw().is_string()) {
      p.text = f.str();
    } else if (f.raw().is_object()) {
      if (f.has("name")) p.name = f.at("name").str();
      if (f.has("text")) p.text = f.at("text").str();
      else if (f.has("prompt")) p.text = f.at("prompt").str();
      if (f.has("prompt_ids")) p.ids = f.at("prompt_ids").ints();
      if (!p.text && !p.ids) f.fail("needs \"text\" (or \"prompt\") or \"prompt_ids\"");
      if (p.ids && p.ids->empty()) f.at("prompt_ids").fail("empty");
    } else {
      f.fail("expected a string or an object");
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) list.fail("no prompts");
  return out;
}

std::filesystem::path prompt_set_dir() {
  if (const char* env = std::getenv("LLMPORT_DATA"); env && *env) return std::filesystem::path(env) / "prompts";
  return std::filesystem::path(LLMPORT_DATA_DIR) / "prompts";
}

}  // namespace llmport
