#include "runtime/kv_cache.hpp"

#include <algorithm>
#include <cstring>

namespace llmport {

KvCache::KvCache(int n_layers, int n_kv_heads, int capacity, int head_dim)
    : n_kv_heads_(n_kv_heads), capacity_(capacity), head_dim_(head_dim),
      k_(static_cast<std::size_t>(n_layers) * n_kv_heads * capacity * head_dim),
      v_(k_.size()) {}

void KvCache::write(int il, int pos, int m, const float* k_rows, const float* v_rows) {
  float* kl = k(il);
  float* vl = v(il);
  const std::size_t hd = static_cast<std::size_t>(head_dim_);
  for (int t = 0; t < m; ++t) {
    for (int h = 0; h < n_kv_heads_; ++h) {
      const std::size_t src = (static_cast<std::size_t>(t) * n_kv_heads_ + h) * hd;
      const std::size_t dst = (static_cast<std::size_t>(h) * capacity_ + pos + t) * hd;
      std::memcpy(kl + dst, k_rows + src, hd * sizeof(float));
      std::memcpy(vl + dst, v_rows + src, hd * sizeof(float));
    }
  }
}

void KvCache::zero() {
  std::fill(k_.begin(), k_.end(), 0.0f);
  std::fill(v_.begin(), v_.end(), 0.0f);
}

}  // namespace llmport
