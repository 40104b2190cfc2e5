#pragma once
// Added tokens of tokenizer.json (HF tokenizers/src/tokenizer/added_vocabulary.rs): found in
// the text before the model runs, leftmost-longest (the reference uses Aho-Corasick with
// MatchKind::LeftmostLongest), honouring lstrip / rstrip / single_word. Tokens with
// normalized=false are matched on the raw text, the others on the normalized text.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llmport::tok {

class Normalizer;

struct AddedToken {
  std::string content;
  int id = -1;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

/// A piece of text: [b, e) bytes, `id` >= 0 when it is an added token.
struct Segment {
  std::size_t b, e;
  int id;
};

class AddedVocabulary {
 public:
  /// Registers all tokens; normalized tokens are matched by their normalized content.
  void build(std::vector<AddedToken> tokens, const Normalizer* normalizer);
  /// Splits `text` on the raw-text (normalized=false) or normalized-text token set.
  /// `split_special`: special tokens are not extracted (their text stays plain text).
  void split(std::string_view text, bool normalized_set, bool split_special, std::vector<Segment>& out) const;
  const AddedToken* by_id(int id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &tokens_[it->second];
  }
  const AddedToken* by_content(std::string_view s) const;
  int max_id() const { return max_id_; }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int>> next;
      int token = -1;  // index into tokens_
    };
    std::vector<Node> nodes{Node{}};
    std::array<bool, 256> first{};  // bytes that can start a match
    bool empty = true;
    void insert(std::string_view s, int token);
    /// Longest match at text[i]: (token index, length) or (-1, 0).
    std::pair<int, std::size_t> longest(std::string_view text, std::size_t i) const;
  };
  std::vector<AddedToken> tokens_;
  std::unordered_map<int, std::size_t> by_id_;
  std::unordered_map<std::string, std::size_t> by_content_;
  Trie raw_, normalized_;
  int max_id_ = -1;
};

}  // namespace llmport::tok
