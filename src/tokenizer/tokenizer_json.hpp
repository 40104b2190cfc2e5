#pragma once
// Streaming (SAX) reader of tokenizer.json. The BPE vocab and merges (hundreds of thousands
// of entries: gemma3's file is 33 MB) go straight into flat vectors instead of a JSON DOM,
// which keeps loading fast; everything else becomes an ordinary nlohmann::json document
// (with model.vocab / model.merges left empty).
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmport::tok {

struct TokenizerJson {
  nlohmann::json doc;
  std::vector<std::pair<std::string, int>> vocab;            // model.vocab entries in file order
  std::vector<std::pair<std::string, std::string>> merges;   // model.merges as (left, right)
  bool has_vocab = false;
};

/// Parses the text of tokenizer.json. Throws ConfigError "<where>: malformed JSON: ..." or
/// "<where>: model.vocab/merges ..." for malformed content.
TokenizerJson parse_tokenizer_json(const std::string& text, const std::string& where);

}  // namespace llmport::tok
