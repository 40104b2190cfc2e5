#include <cmath>

#include "kernels/reference/reference_ops.hpp"

namespace llmport::reference {

void swiglu(const float* gate, const float* up, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace llmport::reference
