#pragma once
// GPT-2 byte-level alphabet (bytes_to_unicode in openai/gpt-2 encoder.py, the same table
// as HF tokenizers' byte_level.rs): every byte maps to one printable code point.
#include <array>
#include <string>
#include <string_view>

namespace llmport::tok {

/// UTF-8 of the code point standing for byte b.
const std::array<std::string, 256>& byte_to_unicode();
/// Byte a code point stands for, or -1 when it is not part of the alphabet.
int unicode_to_byte(char32_t cp);
/// Maps every byte of `s` to its byte-level code point.
std::string byte_level_encode(std::string_view s);

}  // namespace llmport::tok
