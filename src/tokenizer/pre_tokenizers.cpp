// Pre-tokenizers of tokenizer.json (HF tokenizers/src/pre_tokenizers): ByteLevel, Split,
// Metaspace, Digits, Whitespace, WhitespaceSplit, Sequence. The split behaviours follow
// NormalizedString::split (tokenizers/src/tokenizer/normalizer.rs).
#include <algorithm>

#include <utf8proc.h>

#include "llmport/error.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/components.hpp"
#include "tokenizer/regex.hpp"
#include "tokenizer/utf8.hpp"

namespace llmport::tok {
namespace {

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parse_behavior(const std::string& s, const std::string& where) {
  if (s == "Removed") return Behavior::Removed;
  if (s == "Isolated") return Behavior::Isolated;
  if (s == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (s == "MergedWithNext") return Behavior::MergedWithNext;
  if (s == "Contiguous") return Behavior::Contiguous;
  throw ConfigError(where + ": unknown split behavior '" + s + "'");
}

struct Span {
  std::size_t b, e;
  bool match;
};
using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;

/// Matches -> alternating (non-match, match) spans covering the text (Pattern::find_matches).
std::vector<Span> to_spans(std::size_t len, const Ranges& matches, bool invert) {
  std::vector<Span> out;
  if (len == 0) return {{0, 0, invert}};
  std::size_t prev = 0;
  for (auto [b, e] : matches) {
    if (prev != b) out.push_back({prev, b, invert});
    out.push_back({b, e, !invert});
    prev = e;
  }
  if (prev != len) out.push_back({prev, len, invert});
  return out;
}

Ranges apply_behavior(const std::vector<Span>& spans, Behavior beh) {
  Ranges acc;
  bool prev_match = false;
  switch (beh) {
    case Behavior::Isolated:
      for (const auto& s : spans) acc.emplace_back(s.b, s.e);
      break;
    case Behavior::Removed:
      for (const auto& s : spans)
        if (!s.match) acc.emplace_back(s.b, s.e);
      break;
    case Behavior::MergedWithPrevious:
      for (const auto& s : spans) {
        if (s.match && !prev_match && !acc.empty()) {
          acc.back().second = s.e;
        } else {
          acc.emplace_back(s.b, s.e);
        }
        prev_match = s.match;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->match && !prev_match && !acc.empty()) {
          acc.back().first = it->b;
        } else {
          acc.emplace_back(it->b, it->e);
        }
        prev_match = it->match;
      }
      std::reverse(acc.begin(), acc.end());
      break;
    case Behavior::Contiguous:
      for (std::size_t i = 0; i < spans.size(); ++i) {
        const auto& s = spans[i];
        if (i > 0 && s.match == prev_match) {
          acc.back().second = s.e;
        } else {
          acc.emplace_back(s.b, s.e);
        }
        prev_match = s.match;
      }
      break;
  }
  return acc;
}

/// Replaces every piece by its non-empty sub-ranges.
template <class F>
void split_each(std::vector<PreToken>& pieces, F&& ranges_of) {
  std::vector<PreToken> out;
  out.reserve(pieces.size());
  for (auto& p : pieces) {
    Ranges r = ranges_of(p.text);
    if (r.size() == 1 && r[0].first == 0 && r[0].second == p.text.size()) {
      if (!p.text.empty()) out.push_back(std::move(p));
      continue;
    }
    if (out.capacity() < out.size() + r.size()) out.reserve(2 * (out.size() + r.size()));
    for (auto [b, e] : r)
      if (e > b) out.push_back({p.text.substr(b, e - b), p.at_start && b == 0});
  }
  pieces.swap(out);
}

Ranges find_literal(std::string_view text, const std::string& lit) {
  Ranges r;
  if (lit.empty()) return r;
  for (std::size_t f = text.find(lit); f != std::string_view::npos; f = text.find(lit, f + lit.size()))
    r.emplace_back(f, f + lit.size());
  return r;
}

/// Ranges of single characters satisfying `pred`.
template <class P>
Ranges find_chars(std::string_view text, P&& pred) {
  Ranges r;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t b = i;
    char32_t cp = utf8_next(text, i);
    if (pred(cp)) r.emplace_back(b, i);
  }
  return r;
}

bool is_numeric(char32_t cp) {
  auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

class Split final : public PreTokenizer {
 public:
  Split(const json& j, const std::string& where) {
    const json& pat = require(j, "pattern", where);
    if (pat.is_object() && pat.contains("String") && pat["String"].is_string()) {
      literal_ = pat["String"].get<std::string>();
    } else {
      regex_ = std::make_unique<Regex>(pattern_to_regex(pat, where), where);
    }
    behavior_ = parse_behavior(get_string(j, "behavior", where, "Isolated"), where);
    invert_ = get_bool(j, "invert", false);
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_each(pieces, [&](const std::string& t) {
      Ranges m = regex_ ? regex_->find_all(t) : find_literal(t, literal_);
      return apply_behavior(to_spans(t.size(), m, invert_), behavior_);
    });
  }

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
  Behavior behavior_;
  bool invert_;
};

// GPT-2's pre-tokenization regex (byte_level.rs).
constexpr const char* kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(const json& j, const std::string& where)
      : add_prefix_space_(get_bool(j, "add_prefix_space", true)), use_regex_(get_bool(j, "use_regex", true)) {
    if (use_regex_) regex_ = std::make_unique<Regex>(kGpt2Regex, where);
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_each(pieces, [&](std::string& t) {
      if (add_prefix_space_ && (t.empty() || t[0] != ' ')) t.insert(t.begin(), ' ');
      if (!use_regex_) return Ranges{{0, t.size()}};
      return apply_behavior(to_spans(t.size(), regex_->find_all(t), false), Behavior::Isolated);
    });
    for (auto& p : pieces) p.text = byte_level_encode(p.text);
  }

 private:
  bool add_prefix_space_, use_regex_;
  std::unique_ptr<Regex> regex_;
};

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(const json& j, const std::string& where) {
    rep_ = get_string(j, "replacement", where, "\xE2\x96\x81");
    if (rep_.empty()) throw ConfigError(where + ": empty 'replacement'");
    if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
      scheme_ = j["prepend_scheme"].get<std::string>();
      if (scheme_ != "always" && scheme_ != "first" && scheme_ != "never")
        throw ConfigError(where + ": unknown prepend_scheme '" + scheme_ + "'");
    } else {
      scheme_ = get_bool(j, "add_prefix_space", true) ? "always" : "never";
    }
    split_ = get_bool(j, "split", true);
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (auto& p : pieces) {
      std::string out;
      out.reserve(p.text.size() + rep_.size());
      for (char c : p.text) {
        if (c == ' ') {
          out += rep_;
        } else {
          out.push_back(c);
        }
      }
      bool starts = out.compare(0, rep_.size(), rep_) == 0;
      if (!starts && (scheme_ == "always" || (scheme_ == "first" && p.at_start))) out.insert(0, rep_);
      p.text.swap(out);
    }
    if (!split_) return;
    split_each(pieces, [&](const std::string& t) {
      return apply_behavior(to_spans(t.size(), find_literal(t, rep_), false), Behavior::MergedWithNext);
    });
  }

 private:
  std::string rep_, scheme_;
  bool split_ = true;
};

class Digits final : public PreTokenizer {
 public:
  explicit Digits(bool individual) : individual_(individual) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_each(pieces, [&](const std::string& t) {
      return apply_behavior(to_spans(t.size(), find_chars(t, is_numeric), false),
                            individual_ ? Behavior::Isolated : Behavior::Contiguous);
    });
  }

 private:
  bool individual_;
};

/// Whitespace (`\w+|[^\w\s]+`, keeping the matches) and WhitespaceSplit (split on whitespace).
class RegexKeep final : public PreTokenizer {
 public:
  RegexKeep(const char* re, bool invert, const std::string& where)
      : regex_(std::make_unique<Regex>(re, where)), invert_(invert) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_each(pieces, [&](const std::string& t) {
      return apply_behavior(to_spans(t.size(), regex_->find_all(t), invert_), Behavior::Removed);
    });
  }

 private:
  std::unique_ptr<Regex> regex_;
  bool invert_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> v) : v_(std::move(v)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (const auto& p : v_) p->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> v_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = get_string(j, "type", where, "");
  std::string w = where + " pre_tokenizer " + type;
  if (type == "Split") return std::make_unique<Split>(j, w);
  if (type == "ByteLevel") return std::make_unique<ByteLevel>(j, w);
  if (type == "Metaspace") return std::make_unique<Metaspace>(j, w);
  if (type == "Digits") return std::make_unique<Digits>(get_bool(j, "individual_digits", false));
  if (type == "Whitespace") return std::make_unique<RegexKeep>(R"(\w+|[^\w\s]+)", true, w);
  if (type == "WhitespaceSplit") return std::make_unique<RegexKeep>(R"(\s+)", false, w);
  if (type == "Sequence") {
    return std::make_unique<Sequence>(make_sequence<PreTokenizer>(j, "pretokenizers", w, where, make_pre_tokenizer));
  }
  throw ConfigError(where + ": unknown pre_tokenizer type '" + type + "'");
}

}  // namespace llmport::tok
