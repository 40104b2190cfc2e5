// Normalizers of tokenizer.json (HF tokenizers/src/normalizers): NFC/NFD/NFKC/NFKD through
// utf8proc, Lowercase, Strip, StripAccents, Prepend, Replace, Sequence.
#include <cstdlib>

#include <utf8proc.h>

#include "llmport/error.hpp"
#include "tokenizer/components.hpp"
#include "tokenizer/regex.hpp"
#include "tokenizer/utf8.hpp"

namespace llmport::tok {
namespace {

class UnicodeNorm final : public Normalizer {
 public:
  explicit UnicodeNorm(int options) : options_(options) {}
  void normalize(std::string& s) const override {
    // ASCII is invariant under every normalization form and never composes with a
    // following ASCII character, so only each non-ASCII run plus the one ASCII character
    // before it (a base that a combining mark may attach to) goes through utf8proc.
    std::size_t i = 0;
    while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
    if (i == s.size()) return;
    std::string out;
    out.reserve(s.size() + 16);
    std::size_t copied = 0;
    while (i < s.size()) {
      std::size_t b = i > copied ? i - 1 : i;  // include the preceding ASCII base
      std::size_t e = i;
      while (e < s.size() && static_cast<unsigned char>(s[e]) >= 0x80) ++e;
      out.append(s, copied, b - copied);
      append_normalized(std::string_view(s).substr(b, e - b), out);
      copied = e;
      i = e;
      while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
    }
    out.append(s, copied, std::string::npos);
    s.swap(out);
  }

 private:
  void append_normalized(std::string_view run, std::string& out) const {
    utf8proc_uint8_t* buf = nullptr;
    utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                                      static_cast<utf8proc_ssize_t>(run.size()), &buf,
                                      static_cast<utf8proc_option_t>(options_));
    if (n < 0) {
      out.append(run);  // input was validated; keep the text rather than lose it
      return;
    }
    out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
    std::free(buf);
  }
  int options_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) utf8_append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(utf8_next(s, i)))));
    s.swap(out);
  }
};

class StripAccents final : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    std::size_t i = 0;
    while (i < s.size()) {
      char32_t cp = utf8_next(s, i);
      if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) != UTF8PROC_CATEGORY_MN) utf8_append(out, cp);
    }
    s.swap(out);
  }
};

bool is_ws(char32_t cp) {
  // Rust char::is_whitespace: the Unicode White_Space property.
  return (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& s) const override {
    std::size_t b = 0, e = s.size();
    if (left_) {
      while (b < e) {
        std::size_t j = b;
        if (!is_ws(utf8_next(s, j))) break;
        b = j;
      }
    }
    if (right_) {
      while (e > b) {
        std::size_t k = e - 1;
        while (k > b && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
        std::size_t j = k;
        if (!is_ws(utf8_next(s, j))) break;
        e = k;
      }
    }
    s = s.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string p) : p_(std::move(p)) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, p_);
  }

 private:
  std::string p_;
};

class Replace final : public Normalizer {
 public:
  Replace(const json& j, const std::string& where) {
    const json& pat = require(j, "pattern", where);
    content_ = get_string(j, "content", where, "");
    if (pat.is_object() && pat.contains("String") && pat["String"].is_string()) {
      literal_ = pat["String"].get<std::string>();
    } else {
      regex_ = std::make_unique<Regex>(pattern_to_regex(pat, where), where);
    }
  }
  void normalize(std::string& s) const override {
    if (!regex_) {
      if (literal_.empty() || s.find(literal_) == std::string::npos) return;
      std::string out;
      out.reserve(s.size() + s.size() / 2);
      std::size_t pos = 0;
      for (std::size_t f; (f = s.find(literal_, pos)) != std::string::npos; pos = f + literal_.size()) {
        out.append(s, pos, f - pos);
        out += content_;
      }
      out.append(s, pos, std::string::npos);
      s.swap(out);
      return;
    }
    std::string out;
    std::size_t pos = 0;
    for (auto [b, e] : regex_->find_all(s)) {
      out.append(s, pos, b - pos);
      out += content_;
      pos = e;
    }
    out.append(s, pos, std::string::npos);
    s.swap(out);
  }

 private:
  std::string literal_, content_;
  std::unique_ptr<Regex> regex_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> v) : v_(std::move(v)) {}
  void normalize(std::string& s) const override {
    for (const auto& n : v_) n->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> v_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = get_string(j, "type", where, "");
  std::string w = where + " normalizer " + type;
  if (type == "NFC") return std::make_unique<UnicodeNorm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  if (type == "NFD") return std::make_unique<UnicodeNorm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
  if (type == "NFKC") return std::make_unique<UnicodeNorm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  if (type == "NFKD") return std::make_unique<UnicodeNorm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Strip") return std::make_unique<Strip>(get_bool(j, "strip_left", true), get_bool(j, "strip_right", true));
  if (type == "Prepend") return std::make_unique<Prepend>(get_string(j, "prepend", w, ""));
  if (type == "Replace") return std::make_unique<Replace>(j, w);
  if (type == "Sequence") {
    return std::make_unique<Sequence>(make_sequence<Normalizer>(j, "normalizers", w, where, make_normalizer));
  }
  throw ConfigError(where + ": unknown normalizer type '" + type + "'");
}

}  // namespace llmport::tok
