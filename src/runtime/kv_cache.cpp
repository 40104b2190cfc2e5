#include "runtime/kv_cache.hpp"

namespace llmport {

KvCache::KvCache(int n_layers, int n_kv_heads, int capacity, int head_dim)
    : n_kv_heads_(n_kv_heads), capacity_(capacity), head_dim_(head_dim),
      k_(static_cast<std::size_t>(n_layers) * n_kv_heads * capacity * head_dim),
      v_(k_.size()) {}

}  // namespace llmport
