#include <cmath>

#include "kernels/reference/reference_ops.hpp"

namespace llmport::reference {

// HF apply_rotary_pos_emb with rotate_half: pair (i, i + d/2) shares angle pos * inv_freq[i].
// cos/sin are computed in fp32 from an fp32 angle, as HF does (freqs = pos * inv_freq in fp32).
void rope(float* x, int m, int n_heads, int head_dim, const int* positions, const float* inv_freq) {
  const int half = head_dim / 2;
  for (int t = 0; t < m; ++t) {
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (static_cast<std::size_t>(t) * n_heads + h) * head_dim;  // [head_dim]
      for (int i = 0; i < half; ++i) {
        const float angle = static_cast<float>(positions[t]) * inv_freq[i];
        const float c = std::cos(angle), s = std::sin(angle);
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
      }
    }
  }
}

}  // namespace llmport::reference
