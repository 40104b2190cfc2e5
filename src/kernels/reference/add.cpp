#include "kernels/reference/reference_ops.hpp"

namespace llmport::reference {

void add(float* x, const float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace llmport::reference
