// What a model's files ask transformers to run that llmport does not: custom code named by
// auto_map, and what generate() builds from the generation settings even for greedy decoding
// (GenerationMixin._get_logits_processor, its choice of decoding mode).
#include <filesystem>
#include <ostream>
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

// The classes AutoModelForCausalLM.from_pretrained and AutoTokenizer resolve through auto_map
// (AutoModelForSequenceClassification and the like are never read for generation).
bool read_for_generation(const std::string& cls) {
  return cls == "AutoConfig" || cls == "AutoModelForCausalLM" || cls == "AutoTokenizer";
}

// `file`'s auto_map (config.json, or tokenizer_config.json where AutoTokenizer looks first; the
// legacy list form there is AutoTokenizer's [slow, fast]).
void check_auto_map(const json& j, const fs::path& dir, const std::string& where, std::vector<std::string>& out) {
  const json* am = field(j, "auto_map");
  if (!am) return;
  std::vector<std::pair<std::string, json>> entries;
  if (am->is_array()) entries.emplace_back("AutoTokenizer", *am);
  if (am->is_object())
    for (const auto& [cls, target] : am->items()) entries.emplace_back(cls, target);
  for (const auto& [cls, target] : entries) {
    if (!read_for_generation(cls) || !names_code(target, dir)) continue;
    out.push_back(where + ": auto_map " + cls + " names custom code (" + json_excerpt(target) +
                  ") that transformers runs with trust_remote_code=True");
  }
}

bool present(const json& v) {  // any value, 0 included (transformers tests `is not None`)
  if (v.is_null() || v == false) return false;
  if (v.is_array() || v.is_object() || v.is_string()) return !v.empty();
  return true;
}
bool positive(const json& v) { return v.is_number() && v.get<double>() > 0; }
bool above_one(const json& v) { return v.is_number() && v.get<double>() > 1; }
bool not_one(const json& v) { return v.is_number() && v.get<double>() != 1; }

// Settings generate() acts on whatever the decoding (greedy included): token constraints and
// logits processors, and the settings that replace greedy search itself (beam, contrastive,
// DoLa, classifier-free guidance). Sampling and length defaults (temperature, top_p,
// max_new_tokens) are a serving choice run and serve take or override; repetition_penalty
// llmport's sampler applies.
struct Rule {
  const char* key;
  bool (*applies)(const json&);
};
constexpr Rule kRules[] = {{"suppress_tokens", present},       {"begin_suppress_tokens", present},
                           {"bad_words_ids", present},         {"sequence_bias", present},
                           {"no_repeat_ngram_size", positive}, {"min_new_tokens", positive},
                           {"min_length", positive},           {"forced_bos_token_id", present},
                           {"forced_eos_token_id", present},   {"forced_decoder_ids", present},
                           {"exponential_decay_length_penalty", present},
                           {"num_beams", above_one},           {"num_beam_groups", above_one},
                           {"penalty_alpha", positive},        {"guidance_scale", not_one},
                           {"dola_layers", present},           {"watermarking_config", present},
                           {"encoder_repetition_penalty", not_one},
                           {"token_healing", present},         {"stop_strings", present},
                           {"force_words_ids", present},       {"constraints", present}};

void check_generation_settings(const json& gen, const std::string& where, std::vector<std::string>& out) {
  for (const Rule& r : kRules)
    if (const json* v = field(gen, r.key); v && r.applies(*v))
      out.push_back(where + ": " + r.key + " " + json_excerpt(*v) +
                    " (transformers' generate() applies it, greedy decoding included)");
}

}  // namespace

std::vector<std::string> unrun_model_settings(const fs::path& dir) {
  std::vector<std::string> out;
  const fs::path config = dir / "config.json", gen = dir / "generation_config.json",
                 tok = dir / "tokenizer_config.json";
  const json cfg = read_object(config);
  check_auto_map(cfg, dir, config.string(), out);
  check_auto_map(read_object(tok), dir, tok.string(), out);
  // Without generation_config.json, transformers takes the generation settings config.json
  // holds (GenerationConfig.from_model_config).
  const json g = read_object(gen);
  if (g.is_object()) check_generation_settings(g, gen.string(), out);
  else if (!fs::exists(gen)) check_generation_settings(cfg, config.string(), out);
  return out;
}

void warn_unrun_model_settings(const fs::path& dir, std::ostream& out) {
  for (const std::string& w : unrun_model_settings(dir))
    out << "warning: " << printable(w) << " (llmport does not run it)\n";
}

}  // namespace llmport
