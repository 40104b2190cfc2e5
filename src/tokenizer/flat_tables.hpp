#pragma once
// Open-addressing hash tables for the BPE hot paths (vocab lookup by string, merge lookup
// by id pair). Node-based std::unordered_map spent most of the load time of a 262k-token
// vocab in cache misses; these keep (hash, id) in one flat array.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmport::tok {

inline std::uint64_t hash_bytes(std::string_view s) {
  // FNV-1a, then a murmur finaliser to spread the bits over the index range.
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

/// token string -> id; strings are owned by the caller's id -> token table.
class FlatVocab {
 public:
  /// `tokens[id]` is the token of id (empty / unused ids are skipped via `used`).
  void build(const std::vector<std::string>* tokens, const std::vector<bool>& used) {
    tokens_ = tokens;
    std::size_t n = 0;
    for (bool u : used) n += u;
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    mask_ = cap - 1;
    slots_.assign(cap, Slot{0, -1});
    for (std::size_t id = 0; id < used.size(); ++id) {
      if (!used[id]) continue;
      std::uint64_t h = hash_bytes((*tokens)[id]);
      std::size_t i = h & mask_;
      while (slots_[i].id >= 0) {
        if (slots_[i].hash == h && (*tokens)[static_cast<std::size_t>(slots_[i].id)] == (*tokens)[id]) break;
        i = (i + 1) & mask_;
      }
      if (slots_[i].id < 0) slots_[i] = Slot{h, static_cast<int>(id)};
    }
  }
  /// Id of `s`, or -1.
  int find(std::string_view s) const {
    if (slots_.empty()) return -1;
    std::uint64_t h = hash_bytes(s);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& sl = slots_[i];
      if (sl.id < 0) return -1;
      if (sl.hash == h && (*tokens_)[static_cast<std::size_t>(sl.id)] == s) return sl.id;
    }
  }

 private:
  struct Slot {
    std::uint64_t hash;
    int id;
  };
  const std::vector<std::string>* tokens_ = nullptr;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

/// (left id, right id) -> (rank, merged id).
class FlatMerges {
 public:
  struct Value {
    std::uint32_t rank;
    std::uint32_t new_id;
  };
  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    mask_ = cap - 1;
    slots_.assign(cap, Slot{kEmpty, {0, 0}});
  }
  /// Inserts or overwrites (a repeated pair keeps its last rank, as the reference does).
  void put(std::uint64_t key, Value v) {
    for (std::size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == kEmpty || slots_[i].key == key) {
        slots_[i] = Slot{key, v};
        return;
      }
    }
  }
  const Value* find(std::uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return &slots_[i].value;
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr std::uint64_t kEmpty = ~0ULL;
  static std::uint64_t mix(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  struct Slot {
    std::uint64_t key;
    Value value;
  };
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

}  // namespace llmport::tok
