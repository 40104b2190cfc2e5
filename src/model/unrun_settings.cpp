// What a model's config.json and generation_config.json ask transformers to run that llmport
// does not: custom code named by auto_map, and the logits processors generate() builds from
// generation_config.json even for greedy decoding (GenerationMixin._get_logits_processor).
#include <filesystem>
#include <string>
#include <vector>

#include "llmport/file_io.hpp"
#include "llmport/model_config.hpp"
#include "model/json_fields.hpp"

namespace llmport {
namespace {
namespace fs = std::filesystem;
using detail::field;
using detail::json;

// The file's JSON object, or null when it is absent or unreadable (the loaders report that).
json read_object(const fs::path& p) {
  try {
    if (!fs::is_regular_file(p)) return nullptr;
    json j = parse_json_text(read_text_file(p), p.string());
    return j.is_object() ? j : json(nullptr);
  } catch (const std::exception&) {
    return nullptr;
  }
}

// Whether an auto_map target ("module.Class", "org/repo--module.Class", or a list of them
// for AutoTokenizer) names code that exists: another repository's, or a module file in `dir`
// (a config copied without its .py names nothing transformers could run from here).
bool names_code(const json& target, const fs::path& dir) {
  if (target.is_array()) {
    for (const json& t : target)
      if (names_code(t, dir)) return true;
    return false;
  }
  if (!target.is_string()) return false;
  const std::string t = target.get<std::string>();
  if (t.find("--") != std::string::npos) return true;
  const std::size_t dot = t.rfind('.');
  return dot != std::string::npos && dot > 0 && fs::is_regular_file(dir / (t.substr(0, dot) + ".py"));
}

void check_auto_map(const json& config, const fs::path& dir, const std::string& where, std::vector<std::string>& out) {
  const json* am = field(config, "auto_map");
  if (!am || !am->is_object()) return;
  for (const auto& [cls, target] : am->items()) {
    const bool model = cls.rfind("AutoModel", 0) == 0, tokenizer = cls == "AutoTokenizer";
    if ((!model && !tokenizer) || !names_code(target, dir)) continue;
    out.push_back(where + ": auto_map " + cls + " names custom " + (model ? "modeling" : "tokenizer") + " code (" +
                  json_excerpt(target) + ") that transformers runs with trust_remote_code=True");
  }
}

// A setting generate() turns into a logits processor when it holds something.
bool set(const json& v) {
  if (v.is_null() || v == false) return false;
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_array() || v.is_object()) return !v.empty();
  return true;
}

void check_generation_constraints(const json& gen, const std::string& where, std::vector<std::string>& out) {
  // Constraints on which tokens may come, applied by greedy decoding too. Sampling and
  // length defaults (temperature, top_p, max_new_tokens, repetition_penalty) are a serving
  // choice that run and serve take or override; these are not.
  static const char* const kKeys[] = {"suppress_tokens",     "begin_suppress_tokens", "bad_words_ids",
                                      "sequence_bias",       "no_repeat_ngram_size",  "min_new_tokens",
                                      "min_length",          "forced_bos_token_id",   "forced_eos_token_id",
                                      "forced_decoder_ids",  "exponential_decay_length_penalty"};
  for (const char* k : kKeys)
    if (const json* v = field(gen, k); v && set(*v))
      out.push_back(where + ": " + k + " " + json_excerpt(*v) +
                    " (transformers' generate() applies it, greedy decoding included)");
}

}  // namespace

std::vector<std::string> unrun_model_settings(const fs::path& dir) {
  std::vector<std::string> out;
  const fs::path config = dir / "config.json", gen = dir / "generation_config.json";
  check_auto_map(read_object(config), dir, config.string(), out);
  check_generation_constraints(read_object(gen), gen.string(), out);
  return out;
}

}  // namespace llmport
