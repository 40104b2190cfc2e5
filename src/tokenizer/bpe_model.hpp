#pragma once
// BPE model of tokenizer.json (HF tokenizers/src/models/bpe): merges applied by rank with a
// priority queue (word.rs merge_all), byte_fallback to <0xNN> tokens, unk_token/fuse_unk,
// ignore_merges, continuing_subword_prefix / end_of_word_suffix, and a cache of words.
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/flat_tables.hpp"

namespace llmport::tok {

/// Bound on token ids (vocab and added tokens): the id tables are dense, so an id must be
/// below twice the number of entries plus 1024, else a tiny file could ask for gigabytes.
inline long long max_dense_id(std::size_t entries) { return 2 * static_cast<long long>(entries) + 1024; }

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

class BpeModel {
 public:
  /// Builds from the tokenizer.json "model" object. Throws ConfigError naming `where` for a
  /// non-BPE model, a merge naming a token missing from the vocab, or a malformed field.
  /// `vocab` / `merges` come from the streaming reader (tokenizer_json.hpp); when both are
  /// empty, model["vocab"] / model["merges"] of the DOM are used instead.
  static std::unique_ptr<BpeModel> from_json(const nlohmann::json& model, std::vector<std::pair<std::string, int>> vocab,
                                             std::vector<std::pair<std::string, std::string>> merges,
                                             const std::string& where);

  /// Appends the ids of one pre-token (already normalized / byte-level mapped).
  void tokenize(std::string_view word, std::vector<int>& out) const;
  std::optional<int> token_to_id(std::string_view token) const;
  /// Token string of `id`, nullptr when the vocab has no such id.
  const std::string* id_to_token(int id) const;
  /// max id + 1 of the vocab.
  int size() const { return static_cast<int>(id_to_token_.size()); }

 private:
  using MergeInfo = FlatMerges::Value;
  static std::uint64_t key(int a, int b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
  }
  const MergeInfo* find_merge(int a, int b) const {
    return merges_.find(key(a, b));
  }
  void merge_word(std::string_view w, std::vector<int>& out) const;

  std::vector<std::string> id_to_token_;  // [max_id + 1]; "" for holes
  std::vector<bool> has_id_;              // [max_id + 1]
  FlatVocab vocab_;                       // token -> id over id_to_token_
  FlatMerges merges_;
  std::array<int, 256> byte_ids_{};  // id of "<0xNN>", -1 when absent
  std::optional<std::string> unk_token_;
  std::optional<std::string> prefix_, suffix_;
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;

  static constexpr std::size_t kMaxCachedWordBytes = 256;
  static constexpr std::size_t kCacheCapacity = 100000;
  mutable std::shared_mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int>, StringHash, std::equal_to<>> cache_;
};

}  // namespace llmport::tok
