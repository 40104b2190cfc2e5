#include "tokenizer/byte_level.hpp"

#include <vector>

#include "tokenizer/utf8.hpp"

namespace llmport::tok {
namespace {

struct Tables {
  std::array<std::string, 256> to_uni;
  std::vector<int> to_byte;  // [code point] -> byte or -1; code points stay below 512
  Tables() : to_byte(512, -1) {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      utf8_append(to_uni[static_cast<std::size_t>(b)], cp);
      to_byte[cp] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::array<std::string, 256>& byte_to_unicode() { return tables().to_uni; }

int unicode_to_byte(char32_t cp) {
  const auto& t = tables().to_byte;
  return cp < t.size() ? t[cp] : -1;
}

std::string byte_level_encode(std::string_view s) {
  const auto& m = tables().to_uni;
  std::string out;
  out.reserve(s.size() * 2);
  for (char c : s) out += m[static_cast<unsigned char>(c)];
  return out;
}

}  // namespace llmport::tok
