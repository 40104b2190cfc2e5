#pragma once
// The KV cache: K and V of every layer, [n_layers, n_kv_heads, capacity, head_dim] fp32,
// allocated once at construction (no per-token allocation) in PageBuffers (huge pages for
// large caches) and zeroed there, so no page fault lands inside a forward pass. Rows are stored by
// Backend::kv_store, so a backend or decorator controls how they are written.
#include <cstddef>

#include "common/page_buffer.hpp"

namespace llmport {

class KvCache {
 public:
  KvCache(int n_layers, int n_kv_heads, int capacity, int head_dim);
  /// Layer il's K / V: [n_kv_heads, capacity, head_dim].
  float* k(int il) { return base(k_) + layer_offset(il); }
  float* v(int il) { return base(v_) + layer_offset(il); }
  const float* k(int il) const { return base(k_) + layer_offset(il); }
  const float* v(int il) const { return base(v_) + layer_offset(il); }
  int capacity() const { return capacity_; }
  std::size_t bytes() const { return k_.size() + v_.size(); }

 private:
  std::size_t layer_offset(int il) const {
    return static_cast<std::size_t>(il) * n_kv_heads_ * capacity_ * head_dim_;
  }
  static float* base(PageBuffer& b) { return reinterpret_cast<float*>(b.data()); }
  static const float* base(const PageBuffer& b) { return reinterpret_cast<const float*>(b.data()); }
  int n_kv_heads_, capacity_, head_dim_;
  PageBuffer k_;  // fp32 [n_layers, n_kv_heads, capacity, head_dim]
  PageBuffer v_;  // fp32 [n_layers, n_kv_heads, capacity, head_dim]
};

}  // namespace llmport
