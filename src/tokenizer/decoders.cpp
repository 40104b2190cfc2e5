// Decoders of tokenizer.json (HF tokenizers/src/decoders): ByteLevel, ByteFallback, Fuse,
// Strip, Replace, Metaspace, Sequence. Each transforms the list of token strings
// (decode_chain); Tokenizer::decode concatenates the result.
#include "llmport/error.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/components.hpp"
#include "tokenizer/regex.hpp"
#include "tokenizer/utf8.hpp"

namespace llmport::tok {
namespace {

const char* const kReplacementChar = "\xEF\xBF\xBD";

/// Joins all tokens' bytes, then one lossy UTF-8 conversion: a character split across
/// tokens is rebuilt. A token holding a code point outside the byte alphabet (an added
/// token such as "<|im_start|>" is inside it; one with a space is not) keeps its raw bytes.
class ByteLevel final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      std::size_t mark = bytes.size();
      std::size_t i = 0;
      bool ok = true;
      while (i < t.size()) {
        int b = unicode_to_byte(utf8_next(t, i));
        if (b < 0) {
          ok = false;
          break;
        }
        bytes.push_back(static_cast<char>(b));
      }
      if (!ok) {
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens.assign(1, from_utf8_lossy(bytes));
  }
};

/// "<0xNN>" tokens become bytes; a run of them that is not valid UTF-8 becomes one U+FFFD
/// per byte (decoders/byte_fallback.rs).
class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (utf8_valid(pending)) {
        out.push_back(pending);
      } else {
        for (std::size_t k = 0; k < pending.size(); ++k) out.emplace_back(kReplacementChar);
      }
      pending.clear();
    };
    for (auto& t : tokens) {
      int byte = byte_piece_value(t);
      if (byte >= 0) {
        pending.push_back(static_cast<char>(byte));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

/// Removes up to `start` leading and `stop` trailing `content` characters of every token.
class Strip final : public Decoder {
 public:
  Strip(std::string content, std::size_t start, std::size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (content_.empty()) return;
    for (auto& t : tokens) {
      std::size_t b = 0, e = t.size();
      for (std::size_t k = 0; k < start_ && t.compare(b, content_.size(), content_) == 0 && b < e; ++k)
        b += content_.size();
      for (std::size_t k = 0; k < stop_ && e >= b + content_.size() &&
                              t.compare(e - content_.size(), content_.size(), content_) == 0;
           ++k)
        e -= content_.size();
      t = t.substr(b, e - b);
    }
  }

 private:
  std::string content_;
  std::size_t start_, stop_;
};

class Replace final : public Decoder {
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
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) {
      Ranges m;
      if (regex_) {
        m = regex_->find_all(t);
      } else if (!literal_.empty()) {
        for (std::size_t f = t.find(literal_); f != std::string::npos; f = t.find(literal_, f + literal_.size()))
          m.emplace_back(f, f + literal_.size());
      }
      if (m.empty()) continue;
      std::string out;
      std::size_t pos = 0;
      for (auto [b, e] : m) {
        out.append(t, pos, b - pos);
        out += content_;
        pos = e;
      }
      out.append(t, pos, std::string::npos);
      t.swap(out);
    }
  }

 private:
  using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;
  std::string literal_, content_;
  std::unique_ptr<Regex> regex_;
};

/// Replacement char -> space; in the first token it is dropped instead unless the
/// prepend scheme is "never" (decoders/metaspace.rs).
class Metaspace final : public Decoder {
 public:
  Metaspace(std::string rep, bool prepend) : rep_(std::move(rep)), prepend_(prepend) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const std::string& t = tokens[i];
      std::string out;
      for (std::size_t p = 0; p < t.size();) {
        if (t.compare(p, rep_.size(), rep_) == 0) {
          if (!(i == 0 && prepend_)) out.push_back(' ');
          p += rep_.size();
        } else {
          out.push_back(t[p++]);
        }
      }
      tokens[i].swap(out);
    }
  }

 private:
  std::string rep_;
  bool prepend_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> v) : v_(std::move(v)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& d : v_) d->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> v_;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

int byte_piece_value(std::string_view t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  const int h = hex_digit(t[3]), l = hex_digit(t[4]);
  return h < 0 || l < 0 ? -1 : h * 16 + l;
}

std::unique_ptr<Decoder> make_decoder(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = get_string(j, "type", where, "");
  std::string w = where + " decoder " + type;
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip") {
    auto num = [&](const char* k) {
      auto it = j.find(k);
      return it != j.end() && it->is_number_integer() && it->get<long long>() > 0 ? it->get<std::size_t>()
                                                                                : std::size_t{0};
    };
    return std::make_unique<Strip>(get_string(j, "content", w, " "), num("start"), num("stop"));
  }
  if (type == "Replace") return std::make_unique<Replace>(j, w);
  if (type == "Metaspace") {
    std::string scheme;
    if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
      scheme = j["prepend_scheme"].get<std::string>();
    } else {
      scheme = get_bool(j, "add_prefix_space", true) ? "always" : "never";
    }
    return std::make_unique<Metaspace>(get_string(j, "replacement", w, "\xE2\x96\x81"), scheme != "never");
  }
  if (type == "Sequence") {
    return std::make_unique<Sequence>(make_sequence<Decoder>(j, "decoders", w, where, make_decoder));
  }
  throw ConfigError(where + ": unknown decoder type '" + type + "'");
}

}  // namespace llmport::tok
