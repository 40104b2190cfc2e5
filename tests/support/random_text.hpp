#pragma once
// Random text for the differential tests (tests/tokenizer, tests/chat): strings no golden
// holds, built from pieces that stress tokenizers and templates (contractions, digit runs,
// whitespace kinds, NFC/NFD forms, scripts without spaces, ZWJ emoji, special-token text,
// control bytes, Jinja delimiters). Deterministic by seed on every standard library.
#include <string>
#include <vector>

namespace llmport::test {

/// The pieces random_strings draws from (UTF-8).
const std::vector<std::string>& random_text_pieces();

/// n strings of 1-8 pieces (a tenth with a leading, a tenth with a trailing space), then "".
std::vector<std::string> random_strings(unsigned seed, int n);

}  // namespace llmport::test
