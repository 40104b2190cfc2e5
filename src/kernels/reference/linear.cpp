#include "kernels/reference/reference_ops.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "llmport/quant.hpp"

namespace llmport::reference {

void linear(const float* w, int n_out, int n_in, const float* x, int m, float* y,
            const float* bias, int threads) {
  // Below ~1M multiply-adds a parallel region costs more than it saves; more threads than
  // cores only oversubscribe (and libomp's grown teams read as leaks under LSan).
  const double macs = static_cast<double>(m) * n_out * n_in;
  const int nt = macs >= (1 << 20) ? std::clamp(threads, 1, std::max(1, omp_get_num_procs())) : 1;
#pragma omp parallel num_threads(nt) if (nt > 1)
  for (int i = 0; i < m; ++i) {
    const float* xi = x + static_cast<std::size_t>(i) * n_in;  // [n_in]
    float* yi = y + static_cast<std::size_t>(i) * n_out;       // [n_out]
#pragma omp for schedule(static)
    for (int o = 0; o < n_out; ++o) {
      const float* wo = w + static_cast<std::size_t>(o) * n_in;  // row o of W
      float acc = 0.0f;
      for (int k = 0; k < n_in; ++k) acc += xi[k] * wo[k];
      yi[o] = bias ? acc + bias[o] : acc;
    }
  }
}

void q8_activation_round_trip(const float* x, int m, int k, float* out) {
  const std::size_t n = static_cast<std::size_t>(m) * static_cast<std::size_t>(k);
  for (std::size_t b = 0; b < n; b += kQuantBlock) {
    float amax = 0.0f;
    bool finite = true;
    for (int t = 0; t < kQuantBlock; ++t) {
      finite = finite && std::isfinite(x[b + t]);
      amax = std::max(amax, std::abs(x[b + t]));
    }
    const float d = amax / 127.0f;
    // x times 1 / d (one fp32 rounding each, as the kernels do: x / d can round the other
    // way at a half); x / d where 1 / d overflows (amax below ~3.7e-37).
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int t = 0; t < kQuantBlock; ++t) {
      const float v = std::isinf(id) ? x[b + t] / d : x[b + t] * id;
      out[b + t] = !finite ? std::numeric_limits<float>::quiet_NaN() : std::nearbyint(v) * d;  // half to even
    }
  }
}

}  // namespace llmport::reference
