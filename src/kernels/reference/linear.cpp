#include "kernels/reference/reference_ops.hpp"

namespace llmport::reference {

void linear(const float* w, int n_out, int n_in, const float* x, int m, float* y,
            const float* bias) {
  for (int i = 0; i < m; ++i) {
    const float* xi = x + static_cast<std::size_t>(i) * n_in;  // [n_in]
    float* yi = y + static_cast<std::size_t>(i) * n_out;       // [n_out]
    for (int o = 0; o < n_out; ++o) {
      const float* wo = w + static_cast<std::size_t>(o) * n_in;  // row o of W
      float acc = 0.0f;
      for (int k = 0; k < n_in; ++k) acc += xi[k] * wo[k];
      yi[o] = bias ? acc + bias[o] : acc;
    }
  }
}

}  // namespace llmport::reference
