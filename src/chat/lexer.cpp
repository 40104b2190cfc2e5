#include "chat/lexer.hpp"

#include <algorithm>
#include <cstring>

#include "chat/ustr.hpp"
#include "llmport/error.hpp"

namespace llmport::jinja {
namespace {

std::string normalize_source(const std::string& src) {
  std::string out;
  out.reserve(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

/// Length in bytes of the UTF-8 whitespace code point at `p`, 0 if none.
std::size_t space_len(const std::string& s, std::size_t p) {
  if (p >= s.size()) return 0;
  unsigned char c = static_cast<unsigned char>(s[p]);
  if (c < 0x80) return ustr::is_space(c) ? 1 : 0;
  std::size_t len = (c >= 0xF0) ? 4 : (c >= 0xE0) ? 3 : 2;
  auto cps = ustr::decode(std::string_view(s).substr(p, len));
  return cps.size() == 1 && ustr::is_space(cps[0]) ? len : 0;
}

std::size_t skip_space(const std::string& s, std::size_t p) {
  while (std::size_t l = space_len(s, p)) p += l;
  return p;
}

bool only_space(const std::string& s) {
  if (s.empty()) return false;
  for (char32_t c : ustr::decode(s))
    if (!ustr::is_space(c)) return false;
  return true;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : src_(normalize_source(source)) {
    for (std::size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') newlines_.push_back(i);
  }

  std::vector<Token> run() {
    std::size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      std::size_t idx = find_tag(pos);
      std::string text = src_.substr(pos, idx - pos);
      if (idx >= src_.size()) {
        emit_data(text, pos);
        break;
      }
      char kind = src_[idx + 1];
      char sign = idx + 2 < src_.size() && (src_[idx + 2] == '-' || src_[idx + 2] == '+') ? src_[idx + 2] : 0;
      if (sign == '-') {
        text = ustr::strip(text, nullptr, false, true);
      } else if (sign != '+' && kind != '{') {
        std::size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && only_space(text.substr(l_pos))) text.resize(l_pos);
      }
      emit_data(text, pos);
      std::size_t p = idx + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        pos = end_comment(p, idx);
      } else if (kind == '%' && is_raw(p)) {
        pos = raw_block(p, idx);
      } else {
        pos = tag(kind, p, idx);
      }
      line_starting = pos > 0 && src_[pos - 1] == '\n';
    }
    toks_.push_back(Token{Tok::End, "", 0, 0, line_of(src_.size())});
    return std::move(toks_);
  }

 private:
  std::size_t find_tag(std::size_t pos) const {
    while (true) {
      std::size_t i = src_.find('{', pos);
      if (i == std::string::npos || i + 1 >= src_.size()) return src_.size();
      char c = src_[i + 1];
      if (c == '{' || c == '%' || c == '#') return i;
      pos = i + 1;
    }
  }

  int line_of(std::size_t pos) const {
    return 1 + static_cast<int>(std::lower_bound(newlines_.begin(), newlines_.end(), pos) - newlines_.begin());
  }

  [[noreturn]] void fail(std::size_t pos, const std::string& msg) const {
    throw ConfigError("chat template line " + std::to_string(line_of(pos)) + ": " + msg);
  }

  void emit_data(const std::string& text, std::size_t pos) {
    if (!text.empty()) toks_.push_back(Token{Tok::Data, text, 0, 0, line_of(pos)});
  }

  /// After a block/comment end: `+` keeps everything, `-` eats all whitespace, plain eats
  /// one newline (trim_blocks).
  std::size_t after_block_end(std::size_t p, char sign) const {
    if (sign == '-') return skip_space(src_, p);
    if (sign == '+') return p;
    return p < src_.size() && src_[p] == '\n' ? p + 1 : p;
  }

  std::size_t end_comment(std::size_t p, std::size_t start) {
    std::size_t e = src_.find("#}", p);
    if (e == std::string::npos) fail(start, "unclosed comment '{#'");
    char sign = e > p && (src_[e - 1] == '-' || src_[e - 1] == '+') ? src_[e - 1] : 0;
    return after_block_end(e + 2, sign);
  }

  bool is_raw(std::size_t p) const {
    std::size_t q = skip_space(src_, p);
    if (src_.compare(q, 3, "raw") != 0) return false;
    q = skip_space(src_, q + 3);
    return src_.compare(q, 2, "%}") == 0 || src_.compare(q, 3, "-%}") == 0;
  }

  std::size_t raw_block(std::size_t p, std::size_t start) {
    std::size_t q = skip_space(src_, skip_space(src_, p) + 3);
    std::size_t body = src_[q] == '-' ? skip_space(src_, q + 3) : q + 2;
    std::size_t search = body;
    while (true) {
      std::size_t b = src_.find("{%", search);
      if (b == std::string::npos) fail(start, "unclosed '{% raw %}' (no '{% endraw %}')");
      std::size_t r = b + 2;
      char sign = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r++] : 0;
      r = skip_space(src_, r);
      if (src_.compare(r, 6, "endraw") != 0) {
        search = b + 2;
        continue;
      }
      r = skip_space(src_, r + 6);
      char esign = 0;
      if (src_[r] == '-' || src_[r] == '+') esign = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) fail(b, "malformed '{% endraw %}'");
      std::string text = src_.substr(body, b - body);
      if (sign == '-') text = ustr::strip(text, nullptr, false, true);
      emit_data(text, body);
      return after_block_end(r + 2, esign);
    }
  }

  std::size_t tag(char kind, std::size_t p, std::size_t start) {
    bool var = kind == '{';
    toks_.push_back(Token{var ? Tok::VarBegin : Tok::BlockBegin, "", 0, 0, line_of(start)});
    int depth = 0;
    while (true) {
      p = skip_space(src_, p);
      if (p >= src_.size()) fail(start, std::string("unclosed tag '") + (var ? "{{" : "{%") + "'");
      int line = line_of(p);
      if (depth == 0) {
        const char* close = var ? "}}" : "%}";
        if ((src_[p] == '-' || (!var && src_[p] == '+')) && src_.compare(p + 1, 2, close) == 0) {
          toks_.push_back(Token{var ? Tok::VarEnd : Tok::BlockEnd, "", 0, 0, line});
          if (var) return src_[p] == '-' ? skip_space(src_, p + 3) : p + 3;
          return after_block_end(p + 3, src_[p]);
        }
        if (src_.compare(p, 2, close) == 0) {
          toks_.push_back(Token{var ? Tok::VarEnd : Tok::BlockEnd, "", 0, 0, line});
          return var ? p + 2 : after_block_end(p + 2, 0);
        }
      }
      char c = src_[p];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t e = p;
        while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
        toks_.push_back(Token{Tok::Name, src_.substr(p, e - p), 0, 0, line});
        p = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        p = number(p, line);
      } else if (c == '\'' || c == '"') {
        p = string_lit(p, line);
      } else {
        static const char* ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/", "*", "%", "~",
                                    "[", "]", "(", ")", "{", "}", "<", ">", "=", ".", ":", "|", ",", ";"};
        const char* hit = nullptr;
        for (const char* op : ops)
          if (src_.compare(p, std::strlen(op), op) == 0) {
            hit = op;
            break;
          }
        if (!hit) fail(p, std::string("unexpected character '") + c + "'");
        std::string op = hit;
        if (op == "(" || op == "[" || op == "{") ++depth;
        if (op == ")" || op == "]" || op == "}") {
          if (depth == 0) fail(p, "unexpected '" + op + "'");
          --depth;
        }
        toks_.push_back(Token{Tok::Op, op, 0, 0, line});
        p += op.size();
      }
    }
  }

  std::size_t digits(std::size_t p) const {
    // (\d+_)*\d+
    std::size_t e = p;
    while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) ||
                               (src_[e] == '_' && e + 1 < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e + 1])))))
      ++e;
    return e;
  }

  std::size_t number(std::size_t p, int line) {
    std::size_t e = digits(p);
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      e = digits(e + 1);
      is_float = true;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      std::size_t q = e + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) {
        e = digits(q);
        is_float = true;
      }
    }
    std::string text;
    for (std::size_t i = p; i < e; ++i)
      if (src_[i] != '_') text += src_[i];
    Token t{is_float ? Tok::Float : Tok::Int, text, 0, 0, line};
    try {
      if (is_float)
        t.fval = std::stod(text);
      else
        t.ival = std::stoll(text);
    } catch (const std::exception&) {
      fail(p, "number out of range '" + text + "'");
    }
    toks_.push_back(t);
    return e;
  }

  static void append_cp(std::string& out, unsigned long cp) { out += ustr::encode(std::u32string(1, static_cast<char32_t>(cp))); }

  std::size_t string_lit(std::size_t p, int line) {
    char q = src_[p];
    std::string out;
    std::size_t i = p + 1;
    while (true) {
      if (i >= src_.size()) fail(p, "unterminated string literal");
      char c = src_[i];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) fail(p, "unterminated string literal");
      char e = src_[i + 1];
      i += 2;
      // Python "unicode-escape" decoding, as Jinja2 applies to string literals.
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': case 'u': case 'U': {
          std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + n > src_.size() || !std::all_of(src_.begin() + static_cast<long>(i), src_.begin() + static_cast<long>(i + n),
                                                  [](char h) { return std::isxdigit(static_cast<unsigned char>(h)); }))
            fail(p, std::string("truncated \\") + e + " escape in string literal");
          append_cp(out, std::stoul(src_.substr(i, n), nullptr, 16));
          i += n;
          break;
        }
        case 'N': fail(p, "unsupported \\N{...} escape in string literal");
        default:
          if (e >= '0' && e <= '7') {
            unsigned long v = static_cast<unsigned long>(e - '0');
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k, ++i)
              v = v * 8 + static_cast<unsigned long>(src_[i] - '0');
            append_cp(out, v);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    toks_.push_back(Token{Tok::String, out, 0, 0, line});
    return i + 1;
  }

  std::string src_;
  std::vector<std::size_t> newlines_;  // offsets of '\n' in src_, for line numbers
  std::vector<Token> toks_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace llmport::jinja
