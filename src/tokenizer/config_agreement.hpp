#pragma once
// Where tokenizer_config.json (and special_tokens_map.json) say what tokenizer.json does not.
// The Rust tokenizers library, which llmport follows, reads tokenizer.json alone;
// transformers' fast tokenizers apply tokenizer_config.json on top of it: the entries of
// added_tokens_decoder and the named special tokens (bos_token, eos_token, ...) that
// tokenizer.json lacks become added tokens, and an explicit add_bos_token / add_eos_token
// rebuilds the post-processor (v5 TokenizersBackend for every class; v4 LlamaTokenizerFast
// and GemmaTokenizerFast). Where the files disagree, the two read the model differently.
#include <string>
#include <vector>

#include "tokenizer/added_vocabulary.hpp"
#include "tokenizer/components.hpp"

namespace llmport {
class Tokenizer;
}

namespace llmport::tok {

/// A named special token's text: a string or an AddedToken object {"content": ...}; ""
/// for anything else (null, a flag, a malformed object).
std::string named_token(const json& j);

/// tokenizer_config.json's `added_tokens_decoder` ({"<id>": {"content", "special", ...}}),
/// sorted by id; empty when absent or null. Throws ConfigError naming `where` and the entry
/// when a key is not an id or an entry has no string content.
std::vector<AddedToken> config_added_tokens(const json& config, const std::string& where);

/// One line per disagreement, e.g. "added_tokens_decoder 295 ('ar') is not an added token of
/// tokenizer.json" or "add_eos_token is true, but tokenizer.json's post_processor adds no
/// EOS ('</s>')". `config` is tokenizer_config.json (null when absent), `special_map`
/// special_tokens_map.json (null when absent); `tok` is the tokenizer.json pipeline whose
/// added tokens are `added`. Empty when the files agree.
std::vector<std::string> config_disagreements(const Tokenizer& tok, const AddedVocabulary& added, const json& config,
                                              const json& special_map, const std::string& where);

}  // namespace llmport::tok
