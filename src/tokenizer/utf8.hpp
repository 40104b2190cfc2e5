#pragma once
// UTF-8 helpers with Rust semantics (the reference tokenizer is written in Rust):
// `from_utf8_lossy` replaces each maximal invalid subpart with one U+FFFD, as
// String::from_utf8_lossy does (Unicode "substitution of maximal subparts").
#include <cstddef>
#include <string>
#include <string_view>

namespace llmport::tok {

/// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is invalid/truncated.
std::size_t utf8_valid_len(std::string_view s, std::size_t i);
/// Length of the maximal invalid subpart starting at s[i] (>= 1); only meaningful when
/// utf8_valid_len(s, i) == 0.
std::size_t utf8_invalid_len(std::string_view s, std::size_t i);
/// True when `s` is entirely valid UTF-8.
bool utf8_valid(std::string_view s);
/// Byte offset of the first invalid sequence, or s.size() when valid.
std::size_t utf8_first_invalid(std::string_view s);
/// Rust String::from_utf8_lossy.
std::string from_utf8_lossy(std::string_view s);
/// Decodes the (valid) code point at s[i], advancing i.
char32_t utf8_next(std::string_view s, std::size_t& i);
/// Appends the UTF-8 encoding of `cp`.
void utf8_append(std::string& out, char32_t cp);

}  // namespace llmport::tok
