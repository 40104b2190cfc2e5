#pragma once
// A generated tokenizer for synthetic models: a BPE tokenizer.json (Hugging Face tokenizers
// format, the subset llmport's Tokenizer loads) whose every piece is printable ASCII, so a
// random-weight model's output prints as readable characters instead of token ids.
//
// Layout (deterministic: a function of its arguments only):
//   - the special tokens at the ids given (the model config's BOS/EOS), named "<s>" (BOS)
//     and "</s>" (the first EOS; further EOS ids are "<|eos_1|>", "<|eos_2|>", ...);
//   - the 95 printable ASCII characters 0x20..0x7e as the base alphabet, in the order
//     space, lowercase and uppercase letters by English frequency, digits, punctuation;
//   - merges that grow words breadth-first: a piece that is " ", or an optional leading space
//     and a letter followed by lowercase letters, extended by each lowercase letter (in
//     frequency order) — " e", " t", ..., "ee", "et", ..., " ee", ... — until vocab_size ids
//     are used. Merges are written as [a, b] pairs (pieces contain spaces).
//   - pre-tokenizer: Split on ` ?[A-Za-z]+| ?[0-9]+| ?[^A-Za-z0-9 ]+| +` (Isolated), so BPE
//     runs per word; decoder: Fuse (concatenation); post-processor: BOS first when present.
// Text outside printable ASCII has no token and is dropped by encode (no unk token).
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmport {

/// tokenizer.json and tokenizer_config.json of one generated tokenizer.
struct SynthTokenizer {
  nlohmann::json tokenizer;         ///< tokenizer.json
  nlohmann::json tokenizer_config;  ///< tokenizer_config.json (bos/eos token strings)
};

/// Printable ASCII characters in the base alphabet (0x20..0x7e).
inline constexpr int kAsciiAlphabetSize = 95;

/// Builds the tokenizer for a model of `vocab_size` ids (ids 0..vocab_size-1 all used).
/// `bos_id` / `eos_ids` are the model's special ids (each in [0, vocab_size); BOS may equal
/// an EOS, which then names one token "</s>"); `model_max_length` goes to tokenizer_config.
/// Throws UsageError when vocab_size is below the alphabet plus the special tokens, or a
/// special id is out of range.
SynthTokenizer ascii_bpe_tokenizer(int vocab_size, std::optional<int> bos_id, const std::vector<int>& eos_ids,
                                   int model_max_length);

}  // namespace llmport
