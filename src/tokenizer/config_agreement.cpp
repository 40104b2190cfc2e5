#include "tokenizer/config_agreement.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <ostream>
#include <utility>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/tokenizer.hpp"

namespace llmport::tok {
namespace {

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

std::filesystem::path beside(const std::string& where, const char* name) {
  return std::filesystem::path(where).parent_path() / name;
}

void check_added_flags(const AddedToken& a, const json& entry, const std::string& name, std::vector<std::string>& out) {
  const std::pair<const char*, bool> flags[] = {
      {"lstrip", a.lstrip}, {"rstrip", a.rstrip}, {"single_word", a.single_word}, {"normalized", a.normalized}};
  for (const auto& [key, ours] : flags) {
    auto it = entry.find(key);
    if (it == entry.end() || !it->is_boolean() || it->get<bool>() == ours) continue;
    out.push_back(name + " has " + key + " " + (ours ? "false" : "true") + " here, " + (ours ? "true" : "false") +
                  " in tokenizer.json (transformers re-adds the entry: the text around it is split otherwise)");
  }
}

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
    else if (const json& dec = config.at("added_tokens_decoder"); dec.contains(std::to_string(t.id)))
      check_added_flags(*a, dec.at(std::to_string(t.id)), name, out);
  }
}

// added_tokens.json ({"content": id}, the slow tokenizers' file): transformers v4 adds its
// entries when tokenizer_config.json has no added_tokens_decoder.
void check_added_tokens_file(const AddedVocabulary& added, const std::string& where, std::vector<std::string>& out) {
  const std::filesystem::path p = beside(where, "added_tokens.json");
  if (!std::filesystem::exists(p)) return;
  const json j = parse_json_text(read_text_file(p), p.string());
  if (!j.is_object()) throw ConfigError(p.string() + ": expected an object of token -> id");
  for (const auto& [content, id] : j.items()) {
    if (!id.is_number_integer()) throw ConfigError(p.string() + ": field '" + content + "': expected an integer id");
    const AddedToken* a = added.by_content(content);
    if (!a || a->id != id.get<long long>())
      out.push_back(p.string() + ": " + quoted(content) + " (" + std::to_string(id.get<long long>()) +
                    ") is not an added token of tokenizer.json (transformers adds it)");
  }
}

// Every special token a file names: a string (or {"content"}) under any key ending in
// "_token" (bos_token ... mask_token, and v5's model-specific ones such as image_token), and
// the entries of additional_special_tokens and extra_special_tokens (a list, or v4.47's
// object of name -> token).
std::vector<std::pair<std::string, std::string>> named_tokens(const json& file) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!file.is_object()) return out;
  for (const auto& [key, v] : file.items()) {
    // add_bos_token / add_eos_token are flags, whatever their value.
    if (key.size() > 6 && key.compare(key.size() - 6, 6, "_token") == 0 && key.rfind("add_", 0) != 0) {
      if (std::string t = named_token(v); !t.empty()) out.emplace_back(key, t);
    } else if (key == "additional_special_tokens" || key == "extra_special_tokens") {
      if (v.is_array() || v.is_object())
        for (const auto& [k, e] : v.items())
          if (std::string t = named_token(e); !t.empty()) out.emplace_back(key, t);
    }
  }
  return out;
}

void check_named_tokens(const AddedVocabulary& added, const json& config, const json& special_map,
                        const std::string& where, std::vector<std::string>& out) {
  const std::string map_file = beside(where, "special_tokens_map.json").string();
  for (const auto& [file, name] : {std::pair{&config, where}, std::pair{&special_map, map_file}})
    for (const auto& [key, token] : named_tokens(*file))
      if (!added.by_content(token))
        out.push_back(name + ": " + key + " " + quoted(token) +
                      " is not an added token of tokenizer.json (transformers adds it as a special token)");
  // Both files name one, differently: transformers v4 takes special_tokens_map.json's when
  // tokenizer_config.json has no added_tokens_decoder, llmport reads tokenizer_config.json's.
  for (const auto& [key, token] : named_tokens(special_map)) {
    if (key == "additional_special_tokens" || key == "extra_special_tokens") continue;
    const Setting ours = setting(config, json(), key.c_str());
    if (const std::string s = ours.value ? named_token(*ours.value) : ""; !s.empty() && s != token)
      out.push_back(map_file + ": " + key + " " + quoted(token) + " is not tokenizer_config.json's " + quoted(s) +
                    " (transformers may read either; llmport reads tokenizer_config.json's)");
  }
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

// Python's truth of a JSON value, as transformers tests the flags (`if self.add_eos_token`):
// "false" and 1 are true, null and 0 false.
bool truthy(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_null()) return false;
  if (v.is_number_integer()) return v.get<long long>() != 0;
  if (v.is_number()) return v.get<double>() != 0.0;
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  return !v.empty();  // a list or an object
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
    if (it == config.end() || !f.id) continue;
    const bool says = truthy(*it);
    if (says == post_processor_adds(tok, *f.id, f.first)) continue;
    out.push_back(where + ": " + std::string(f.key) + " is " + (says ? "true" : "false") + ", but tokenizer.json's post_processor " +
                  (says ? "adds no " : "adds ") + f.what + " (" + quoted(f.token) +
                  ") (transformers rebuilds the post-processor from the flag)");
  }
}

}  // namespace

std::string named_token(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object()) {
    auto it = j.find("content");
    if (it != j.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

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
  check_added_tokens_file(added, where, out);
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
