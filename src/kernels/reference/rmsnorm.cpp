#include <cmath>

#include "kernels/reference/reference_ops.hpp"

namespace llmport::reference {

void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps) {
  for (int i = 0; i < m; ++i) {
    const float* xi = x + static_cast<std::size_t>(i) * dim;
    float* yi = y + static_cast<std::size_t>(i) * dim;
    float ss = 0.0f;
    for (int k = 0; k < dim; ++k) ss += xi[k] * xi[k];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
    for (int k = 0; k < dim; ++k) yi[k] = xi[k] * inv * w[k];
  }
}

}  // namespace llmport::reference
