#include "tokenizer/added_vocabulary.hpp"

#include <utf8proc.h>

#include "tokenizer/components.hpp"
#include "tokenizer/utf8.hpp"

namespace llmport::tok {
namespace {

bool is_whitespace(char32_t cp) {
  return (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

// Rust char::is_alphanumeric() || '_' (added_vocabulary.rs is_word_character).
bool is_word_char(char32_t cp) {
  if (cp == '_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

// Start of the code point that ends at `end` (exclusive).
std::size_t prev_char(std::string_view s, std::size_t end) {
  std::size_t k = end - 1;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  return k;
}

char32_t char_at(std::string_view s, std::size_t i) { return utf8_next(s, i); }

}  // namespace

void AddedVocabulary::Trie::insert(std::string_view s, int token) {
  if (s.empty()) return;
  empty = false;
  first[static_cast<unsigned char>(s[0])] = true;
  int n = 0;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    int child = -1;
    for (auto& [k, v] : nodes[static_cast<std::size_t>(n)].next)
      if (k == c) child = v;
    if (child < 0) {
      child = static_cast<int>(nodes.size());
      nodes[static_cast<std::size_t>(n)].next.emplace_back(c, child);
      nodes.emplace_back();
    }
    n = child;
  }
  // First registration wins for identical contents.
  if (nodes[static_cast<std::size_t>(n)].token < 0) nodes[static_cast<std::size_t>(n)].token = token;
}

std::pair<int, std::size_t> AddedVocabulary::Trie::longest(std::string_view text, std::size_t i) const {
  std::pair<int, std::size_t> best{-1, 0};
  int n = 0;
  for (std::size_t k = i; k < text.size(); ++k) {
    auto c = static_cast<unsigned char>(text[k]);
    int child = -1;
    for (const auto& [key, v] : nodes[static_cast<std::size_t>(n)].next)
      if (key == c) {
        child = v;
        break;
      }
    if (child < 0) break;
    n = child;
    if (nodes[static_cast<std::size_t>(n)].token >= 0) best = {nodes[static_cast<std::size_t>(n)].token, k + 1 - i};
  }
  return best;
}

void AddedVocabulary::build(std::vector<AddedToken> tokens, const Normalizer* normalizer) {
  tokens_ = std::move(tokens);
  for (std::size_t k = 0; k < tokens_.size(); ++k) {
    const AddedToken& t = tokens_[k];
    by_id_[t.id] = k;
    by_content_.emplace(t.content, k);
    if (t.id > max_id_) max_id_ = t.id;
    if (t.normalized) {
      std::string s = t.content;
      if (normalizer) normalizer->normalize(s);
      normalized_.insert(s, static_cast<int>(k));
    } else {
      raw_.insert(t.content, static_cast<int>(k));
    }
  }
}

const AddedToken* AddedVocabulary::by_content(std::string_view s) const {
  auto it = by_content_.find(std::string(s));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

void AddedVocabulary::split(std::string_view text, bool normalized_set, bool split_special,
                            std::vector<Segment>& out) const {
  const Trie& trie = normalized_set ? normalized_ : raw_;
  std::size_t start_offset = 0;
  if (!trie.empty) {
    std::size_t i = 0;
    while (i < text.size()) {
      if (!trie.first[static_cast<unsigned char>(text[i])]) {
        ++i;
        continue;
      }
      auto [tk, len] = trie.longest(text, i);
      if (tk < 0) {
        ++i;
        continue;
      }
      std::size_t start = i, stop = i + len;
      i = stop;  // matches never overlap, even when a match is then discarded
      const AddedToken& t = tokens_[static_cast<std::size_t>(tk)];
      if (split_special && t.special) continue;
      if (t.single_word) {
        bool start_space = start == 0 || !is_word_char(char_at(text, prev_char(text, start)));
        bool stop_space = stop == text.size() || !is_word_char(char_at(text, stop));
        if (!start_space || !stop_space) continue;
      }
      if (t.lstrip) {
        std::size_t s = start;
        while (s > 0) {
          std::size_t p = prev_char(text, s);
          if (!is_whitespace(char_at(text, p))) break;
          s = p;
        }
        start = std::max(s, start_offset);
      }
      if (t.rstrip) {
        while (stop < text.size()) {
          std::size_t j = stop;
          if (!is_whitespace(utf8_next(text, j))) break;
          stop = j;
        }
        i = stop;
      }
      if (start > start_offset) out.push_back({start_offset, start, -1});
      out.push_back({start, stop, t.id});
      start_offset = stop;
    }
  }
  if (start_offset != text.size()) out.push_back({start_offset, text.size(), -1});
}

}  // namespace llmport::tok
