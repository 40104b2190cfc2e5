#include "runtime/kv_cache.hpp"

namespace llmport {

KvCache::KvCache(int n_layers, int n_kv_heads, int capacity, int head_dim)
    : n_kv_heads_(n_kv_heads), capacity_(capacity), head_dim_(head_dim),
      // Faulted in now, at engine construction, as the former zero-filled vector was: left
      // to the first kv_store, the page faults land inside a prefill (page_buffer.hpp).
      k_(static_cast<std::size_t>(n_layers) * n_kv_heads * capacity * head_dim * sizeof(float),
         /*fault_in=*/true),
      v_(k_.size(), /*fault_in=*/true) {}

}  // namespace llmport
