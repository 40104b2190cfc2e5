#pragma once
// The KV cache: K and V of every layer, [n_layers, n_kv_heads, capacity, head_dim] fp32,
// allocated once at construction (no per-token allocation).
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
  /// Stores m rows at positions pos..pos+m-1 of layer il from k_rows, v_rows:
  /// [m, n_kv_heads, head_dim] (the layout the K/V projections produce).
  void write(int il, int pos, int m, const float* k_rows, const float* v_rows);
  /// Sets every entry to zero (only needed when stale entries could be read).
  void zero();
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
