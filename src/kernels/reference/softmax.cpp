#include <cmath>

#include "kernels/reference/reference_ops.hpp"

namespace llmport::reference {

void softmax(float* x, std::size_t n) {
  if (n == 0) return;
  float mx = x[0];
  for (std::size_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  for (std::size_t i = 0; i < n; ++i) x[i] /= sum;
}

}  // namespace llmport::reference
