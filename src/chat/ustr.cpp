#include "chat/ustr.hpp"

#include <utf8proc.h>

namespace llmport::jinja::ustr {

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t n = static_cast<utf8proc_ssize_t>(s.size());
  while (n > 0) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t len = utf8proc_iterate(p, n, &cp);
    if (len <= 0) {
      out.push_back(0xFFFD);
      len = 1;
    } else {
      out.push_back(static_cast<char32_t>(cp));
    }
    p += len;
    n -= len;
  }
  return out;
}

std::string encode(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  utf8proc_uint8_t buf[4];
  for (char32_t c : cps) {
    auto len = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(len));
  }
  return out;
}

std::size_t length(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_space(char32_t c) {
  // Python's str.isspace(): bidi class WS/B/S or category Zs.
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x1F: case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::u32string cps = decode(s);
  std::u32string set = chars ? decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  std::size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  return encode(std::u32string_view(cps).substr(b, e - b));
}

std::string upper(std::string_view s) {
  std::u32string cps = decode(s);
  for (auto& c : cps) c = static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
  return encode(cps);
}

std::string lower(std::string_view s) {
  std::u32string cps = decode(s);
  for (auto& c : cps) c = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  return encode(cps);
}

namespace {
bool cased(char32_t c) {
  auto i = static_cast<utf8proc_int32_t>(c);
  return utf8proc_toupper(i) != i || utf8proc_tolower(i) != i ||
         utf8proc_category(i) == UTF8PROC_CATEGORY_LT;
}
bool cp_is_lower(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_LL; }
bool cp_is_upper(char32_t c) {
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT;
}
bool cp_is_alpha(char32_t c) {
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
}
bool cp_is_digit(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_ND;
}
char32_t to_lo(char32_t c) { return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))); }
char32_t to_title(char32_t c) {
  return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
}
}  // namespace

std::string title(std::string_view s) {
  std::u32string cps = decode(s);
  bool prev_cased = false;
  for (auto& c : cps) {
    bool is_cased = cased(c);
    c = prev_cased ? to_lo(c) : to_title(c);
    prev_cased = is_cased;
  }
  return encode(cps);
}

std::string capitalize(std::string_view s) {
  std::u32string cps = decode(s);
  for (std::size_t i = 0; i < cps.size(); ++i) cps[i] = i == 0 ? to_title(cps[i]) : to_lo(cps[i]);
  return encode(cps);
}

std::vector<std::string> split(std::string_view s, const std::string* sep, long maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    std::size_t pos = 0;
    while (maxsplit < 0 || static_cast<long>(out.size()) < maxsplit) {
      std::size_t f = s.find(*sep, pos);
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, f - pos));
      pos = f + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  std::u32string cps = decode(s);
  std::size_t i = 0, n = cps.size();
  while (true) {
    while (i < n && is_space(cps[i])) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && static_cast<long>(out.size()) == maxsplit) {
      std::size_t e = n;
      while (e > i && is_space(cps[e - 1])) --e;
      out.push_back(encode(std::u32string_view(cps).substr(i, e - i)));
      break;
    }
    std::size_t j = i;
    while (j < n && !is_space(cps[j])) ++j;
    out.push_back(encode(std::u32string_view(cps).substr(i, j - i)));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::string* sep, long maxsplit) {
  if (maxsplit < 0) return split(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep) {
    std::size_t end = s.size();
    while (static_cast<long>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      std::size_t f = s.rfind(*sep, end - sep->size());
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(f + sep->size(), end - f - sep->size()));
      end = f;
    }
    out.emplace_back(s.substr(0, end));
  } else {
    std::u32string cps = decode(s);
    std::size_t e = cps.size();
    while (true) {
      while (e > 0 && is_space(cps[e - 1])) --e;
      if (e == 0) break;
      if (static_cast<long>(out.size()) == maxsplit) {
        std::size_t b = 0;
        while (b < e && is_space(cps[b])) ++b;
        out.push_back(encode(std::u32string_view(cps).substr(b, e - b)));
        break;
      }
      std::size_t b = e;
      while (b > 0 && !is_space(cps[b - 1])) --b;
      out.push_back(encode(std::u32string_view(cps).substr(b, e - b)));
      e = b;
    }
  }
  return {out.rbegin(), out.rend()};
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl, long count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `repl` between code points (and at both ends).
    std::u32string cps = decode(s);
    long done = 0;
    for (std::size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      if (i < cps.size()) out += encode(std::u32string_view(cps).substr(i, 1));
    }
    return out;
  }
  std::size_t pos = 0;
  long done = 0;
  while (count < 0 || done < count) {
    std::size_t f = s.find(old, pos);
    if (f == std::string_view::npos) break;
    out.append(s.substr(pos, f - pos));
    out.append(repl);
    pos = f + old.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

namespace {
template <class F>
bool all_of(std::string_view s, F f) {
  std::u32string cps = decode(s);
  if (cps.empty()) return false;
  for (char32_t c : cps)
    if (!f(c)) return false;
  return true;
}
}  // namespace

bool is_alpha(std::string_view s) { return all_of(s, cp_is_alpha); }
bool is_digit(std::string_view s) { return all_of(s, cp_is_digit); }
bool is_alnum(std::string_view s) { return all_of(s, [](char32_t c) { return cp_is_alpha(c) || cp_is_digit(c); }); }

bool is_lower(std::string_view s) {
  bool any = false;
  for (char32_t c : decode(s)) {
    if (cp_is_upper(c)) return false;
    any = any || cp_is_lower(c);
  }
  return any;
}

bool is_upper(std::string_view s) {
  bool any = false;
  for (char32_t c : decode(s)) {
    if (cp_is_lower(c)) return false;
    any = any || cp_is_upper(c);
  }
  return any;
}

bool is_printable(char32_t c) {
  if (c == ' ') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

}  // namespace llmport::jinja::ustr
