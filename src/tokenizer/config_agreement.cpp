#include "tokenizer/config_agreement.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <ostream>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/tokenizer.hpp"

namespace llmport::tok {
namespace {

// A named special token: a string or an AddedToken object {"content": ...}; "" otherwise.
std::string named_token(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object()) {
    auto it = j.find("content");
    if (it != j.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

struct Setting {
  const json* value = nullptr;
  bool from_map = false;  // special_tokens_map.json, not tokenizer_config.json
};

// `key` of tokenizer_config.json, else of special_tokens_map.json (as transformers merges them).
Setting setting(const json& config, const json& special_map, const char* key) {
  if (config.is_object())
    if (auto it = config.find(key); it != config.end() && !it->is_null()) return {&*it, false};
  if (special_map.is_object())
    if (auto it = special_map.find(key); it != special_map.end() && !it->is_null())
      return {&*it, true};
  return {};
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

void check_added_tokens(const AddedVocabulary& added, const json& config, const std::string& where,
                        std::vector<std::string>& out) {
  for (const AddedToken& t : config_added_tokens(config, where)) {
    const std::string name = where + ": added_tokens_decoder " + std::to_string(t.id) + " (" + quoted(t.content) + ")";
    const AddedToken* a = added.by_id(t.id);
    if (!a)
      out.push_back(name + " is not an added token of tokenizer.json (transformers adds it: its text then encodes "
                           "as that one token)");
    else if (a->content != t.content)
      out.push_back(name + " is " + quoted(a->content) + " in tokenizer.json");
    else if (a->special != t.special)
      out.push_back(name + std::string(t.special ? " is special" : " is not special") + " here, " +
                    (a->special ? "special" : "not special") + " in tokenizer.json (skipped or kept in decoding)");
  }
}

// `where` names tokenizer_config.json; special_tokens_map.json is its neighbour.
std::string file_of(const Setting& s, const std::string& where) {
  return s.from_map ? (std::filesystem::path(where).parent_path() / "special_tokens_map.json").string() : where;
}

void check_named_tokens(const AddedVocabulary& added, const json& config, const json& special_map,
                        const std::string& where, std::vector<std::string>& out) {
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"}) {
    const Setting v = setting(config, special_map, key);
    const std::string s = v.value ? named_token(*v.value) : "";
    // Both files name it, differently: transformers v4 takes special_tokens_map.json's when
    // tokenizer_config.json has no added_tokens_decoder, llmport reads tokenizer_config.json.
    if (const Setting m = setting(json(), special_map, key); v.value && !v.from_map && m.value)
      if (const std::string other = named_token(*m.value); !other.empty() && other != s)
        out.push_back(file_of(m, where) + ": " + key + " " + quoted(other) + " is not tokenizer_config.json's " +
                      quoted(s) + " (transformers may read either; llmport reads tokenizer_config.json's)");
    if (!s.empty() && !added.by_content(s))
      out.push_back(file_of(v, where) + ": " + key + " " + quoted(s) +
                    " is not an added token of tokenizer.json (transformers adds it as a special token)");
  }
  if (const Setting extra = setting(config, special_map, "additional_special_tokens");
      extra.value && extra.value->is_array())
    for (const json& e : *extra.value)
      if (const std::string s = named_token(e); !s.empty() && !added.by_content(s))
        out.push_back(file_of(extra, where) + ": additional_special_tokens " + quoted(s) +
                      " is not an added token of tokenizer.json (transformers adds it as a special token)");
}

// Whether tokenizer.json's post-processor puts `id` first (bos) or last (eos) of a text's ids.
bool post_processor_adds(const Tokenizer& tok, int id, bool first) {
  try {
    const std::vector<int> with = tok.encode("a");
    EncodeOptions plain;
    plain.add_special_tokens = false;
    const std::vector<int> without = tok.encode("a", plain);
    if (with.size() <= without.size()) return false;
    return first ? with.front() == id && (without.empty() || without.front() != id)
                 : with.back() == id && (without.empty() || without.back() != id);
  } catch (const Error&) {
    return false;  // a tokenizer that cannot encode "a" has told its user already
  }
}

void check_add_flags(const Tokenizer& tok, const json& config, const std::string& where,
                     std::vector<std::string>& out) {
  if (!config.is_object()) return;
  struct Flag {
    const char* key;
    const char* what;
    std::optional<int> id;
    std::string token;
    bool first;
  };
  for (const Flag& f : {Flag{"add_bos_token", "BOS", tok.bos_id(), tok.bos_token(), true},
                        Flag{"add_eos_token", "EOS", tok.eos_id(), tok.eos_token(), false}}) {
    auto it = config.find(f.key);
    // transformers turns a flag off when its token is unset: nothing to disagree about.
    if (it == config.end() || !it->is_boolean() || !f.id) continue;
    const bool says = it->get<bool>();
    if (says == post_processor_adds(tok, *f.id, f.first)) continue;
    out.push_back(where + ": " + std::string(f.key) + " is " + (says ? "true" : "false") + ", but tokenizer.json's post_processor " +
                  (says ? "adds no " : "adds ") + f.what + " (" + quoted(f.token) +
                  ") (transformers rebuilds the post-processor from the flag)");
  }
}

}  // namespace

std::vector<AddedToken> config_added_tokens(const json& config, const std::string& where) {
  std::vector<AddedToken> out;
  if (!config.is_object()) return out;
  auto it = config.find("added_tokens_decoder");
  if (it == config.end() || it->is_null()) return out;
  if (!it->is_object()) throw ConfigError(where + ": field 'added_tokens_decoder': expected an object of id -> token");
  for (const auto& [key, v] : it->items()) {
    AddedToken t;
    const std::string field = where + ": field 'added_tokens_decoder." + key + "'";
    std::size_t used = 0;
    try {
      t.id = std::stoi(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != key.size() || key.empty() || t.id < 0) throw ConfigError(field + ": the key is not a token id");
    if (!v.is_object() || !v.contains("content") || !v["content"].is_string())
      throw ConfigError(field + ": expected an object with a string 'content'");
    t.content = v["content"].get<std::string>();
    t.special = get_bool(v, "special", false);
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  return out;
}

std::vector<std::string> config_disagreements(const Tokenizer& tok, const AddedVocabulary& added, const json& config,
                                              const json& special_map, const std::string& where) {
  std::vector<std::string> out;
  check_added_tokens(added, config, where, out);
  check_named_tokens(added, config, special_map, where, out);
  check_add_flags(tok, config, where, out);
  return out;
}

}  // namespace llmport::tok

namespace llmport {

void warn_tokenizer_disagreements(const Tokenizer& tok, std::ostream& out) {
  for (const std::string& d : tok.config_disagreements())
    out << "warning: " << printable(d) << " (llmport runs tokenizer.json's reading, as the Rust tokenizers library does)\n";
}

std::vector<int> tokenizer_config_special_ids(const std::filesystem::path& dir) {
  const std::filesystem::path p = dir / "tokenizer_config.json";
  std::vector<int> ids;
  if (!std::filesystem::exists(p)) return ids;
  const tok::json cfg = parse_json_text(read_text_file(p), p.string());
  for (const tok::AddedToken& t : tok::config_added_tokens(cfg, p.string()))
    if (t.special) ids.push_back(t.id);
  return ids;
}

}  // namespace llmport
