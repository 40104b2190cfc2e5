#include "tokenizer/utf8.hpp"

namespace llmport::tok {
namespace {

// Number of bytes of the longest valid prefix of the sequence at s[i] and whether it is
// complete. Follows Unicode Table 3-7 (well-formed byte sequences).
struct Scan {
  std::size_t len;
  bool complete;
};

Scan scan(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) -> int {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : -1;
  };
  int c0 = b(0);
  if (c0 < 0x80) return {1, true};
  int need = 0;
  int lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    need = 1;
  } else if (c0 == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((c0 >= 0xE1 && c0 <= 0xEC) || c0 == 0xEE || c0 == 0xEF) {
    need = 2;
  } else if (c0 == 0xED) {
    need = 2, hi = 0x9F;
  } else if (c0 == 0xF0) {
    need = 3, lo = 0x90;
  } else if (c0 >= 0xF1 && c0 <= 0xF3) {
    need = 3;
  } else if (c0 == 0xF4) {
    need = 3, hi = 0x8F;
  } else {
    return {1, false};
  }
  for (int k = 1; k <= need; ++k) {
    int c = b(static_cast<std::size_t>(k));
    int l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) return {static_cast<std::size_t>(k), false};
  }
  return {static_cast<std::size_t>(need + 1), true};
}

}  // namespace

std::size_t utf8_valid_len(std::string_view s, std::size_t i) {
  Scan r = scan(s, i);
  return r.complete ? r.len : 0;
}

std::size_t utf8_invalid_len(std::string_view s, std::size_t i) { return scan(s, i).len; }

std::size_t utf8_first_invalid(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    Scan r = scan(s, i);
    if (!r.complete) return i;
    i += r.len;
  }
  return s.size();
}

bool utf8_valid(std::string_view s) { return utf8_first_invalid(s) == s.size(); }

std::string from_utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    Scan r = scan(s, i);
    if (r.complete) {
      out.append(s.substr(i, r.len));
    } else {
      out.append("\xEF\xBF\xBD");
    }
    i += r.len;
  }
  return out;
}

char32_t utf8_next(std::string_view s, std::size_t& i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    ++i;
    return c;
  }
  int n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
  char32_t cp = c & (0x3F >> n);
  for (int k = 1; k <= n && i + k < s.size(); ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += static_cast<std::size_t>(n) + 1;
  return cp;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace llmport::tok
