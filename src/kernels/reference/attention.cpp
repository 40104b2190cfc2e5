#include <cmath>
#include <vector>

#include "kernels/reference/reference_ops.hpp"

namespace llmport::reference {

// Query row t (absolute position start_pos + t) attends to cache positions 0..start_pos + t.
// Query head h reads KV head h / (n_heads / n_kv_heads) (HF repeat_kv: each KV head is
// repeated `group` times consecutively).
void attention(const float* q, const float* k_cache, const float* v_cache, int max_seq,
               int start_pos, int m, int n_heads, int n_kv_heads, int head_dim, float scale,
               float* out) {
  const int group = n_heads / n_kv_heads;
  std::vector<float> p(static_cast<std::size_t>(start_pos + m));  // [n_ctx] probabilities
  for (int t = 0; t < m; ++t) {
    const int n_ctx = start_pos + t + 1;
    for (int h = 0; h < n_heads; ++h) {
      const int kvh = h / group;
      const float* qv = q + (static_cast<std::size_t>(t) * n_heads + h) * head_dim;
      const float* kc = k_cache + static_cast<std::size_t>(kvh) * max_seq * head_dim;
      const float* vc = v_cache + static_cast<std::size_t>(kvh) * max_seq * head_dim;
      for (int j = 0; j < n_ctx; ++j) {
        float dot = 0.0f;
        for (int d = 0; d < head_dim; ++d) dot += qv[d] * kc[static_cast<std::size_t>(j) * head_dim + d];
        p[j] = dot * scale;
      }
      softmax(p.data(), static_cast<std::size_t>(n_ctx));
      float* o = out + (static_cast<std::size_t>(t) * n_heads + h) * head_dim;
      for (int d = 0; d < head_dim; ++d) o[d] = 0.0f;
      for (int j = 0; j < n_ctx; ++j)
        for (int d = 0; d < head_dim; ++d) o[d] += p[j] * vc[static_cast<std::size_t>(j) * head_dim + d];
    }
  }
}

}  // namespace llmport::reference
