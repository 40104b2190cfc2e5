#pragma once
// The KV cache: K and V of every layer, [n_layers, n_kv_heads, capacity, head_dim] fp32,
// allocated once at construction (no per-token allocation). Rows are stored by
// Backend::kv_store, so a backend or decorator controls how they are written.
#include <cstddef>
#include <vector>

namespace llmport {

class KvCache {
 public:
  KvCache(int n_layers, int n_kv_heads, int capacity, int head_dim);
  /// Layer il's K / V: [n_kv_heads, capacity, head_dim].
  float* k(int il) { return k_.data() + layer_offset(il); }
  float* v(int il) { return v_.data() + layer_offset(il); }
  const float* k(int il) const { return k_.data() + layer_offset(il); }
  const float* v(int il) const { return v_.data() + layer_offset(il); }
  int capacity() const { return capacity_; }
  std::size_t bytes() const { return (k_.size() + v_.size()) * sizeof(float); }

 private:
  std::size_t layer_offset(int il) const {
    return static_cast<std::size_t>(il) * n_kv_heads_ * capacity_ * head_dim_;
  }
  int n_kv_heads_, capacity_, head_dim_;
  std::vector<float> k_;  // [n_layers, n_kv_heads, capacity, head_dim]
  std::vector<float> v_;  // [n_layers, n_kv_heads, capacity, head_dim]
};

}  // namespace llmport
