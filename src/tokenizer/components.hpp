#pragma once
// The pipeline stages of a Hugging Face tokenizer.json, each built from its JSON object.
// Semantics follow huggingface/tokenizers (tokenizers/src/{normalizers,pre_tokenizers,
// processors,decoders}); offsets are not tracked because llmport only needs ids and text.
// Every factory throws ConfigError "<where>: unknown <kind> type 'X'" for a component it
// does not implement, never skipping it silently.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"

namespace llmport::tok {

using nlohmann::json;

/// Rewrites one piece of text (NFC, Prepend, Replace, ...).
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& s) const = 0;
};
/// `j` may be null (no normalizer): returns nullptr.
std::unique_ptr<Normalizer> make_normalizer(const json& j, const std::string& where);

/// One pre-token. `at_start`: it begins at offset 0 of the original input (Metaspace
/// prepend_scheme "first" depends on it).
struct PreToken {
  std::string text;
  bool at_start = false;
};

/// Splits (and may rewrite) pre-tokens: ByteLevel, Split, Metaspace, Digits, Sequence...
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(std::vector<PreToken>& pieces) const = 0;
};
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& where);

/// Adds special tokens around one sequence of ids (only called with add_special_tokens).
class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int>& ids) const = 0;
};
std::unique_ptr<PostProcessor> make_post_processor(const json& j, const std::string& where);

/// Transforms the token strings of a decode; the result is concatenated.
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};
std::unique_ptr<Decoder> make_decoder(const json& j, const std::string& where);
/// The byte a ByteFallback piece "<0xNN>" stands for (0-255), or -1 for any other token
/// (decoders/byte_fallback.rs: six characters, two hex digits).
int byte_piece_value(std::string_view token);

/// Reads a {"String": s} / {"Regex": r} pattern object as a PCRE2 regex source.
std::string pattern_to_regex(const json& pattern, const std::string& where);

/// Shared field readers that throw ConfigError naming `where` and the key.
const json& require(const json& j, const char* key, const std::string& where);
std::string get_string(const json& j, const char* key, const std::string& where, const std::string& dflt);
bool get_bool(const json& j, const char* key, bool dflt);

/// Builds the children of a `Sequence` component: the array under `key` (e.g.
/// "normalizers"), each element made by `make(element, where)`; null children are dropped.
/// Throws ConfigError when the key is missing or not an array.
template <class T, class Make>
std::vector<std::unique_ptr<T>> make_sequence(const json& j, const char* key, const std::string& w,
                                              const std::string& where, Make make) {
  const json& arr = require(j, key, w);
  if (!arr.is_array()) throw ConfigError(w + ": '" + key + "' must be an array");
  std::vector<std::unique_ptr<T>> v;
  for (const auto& e : arr)
    if (auto c = make(e, where)) v.push_back(std::move(c));
  return v;
}

}  // namespace llmport::tok
