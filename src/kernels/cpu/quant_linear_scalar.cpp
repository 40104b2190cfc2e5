// Quantized linear, scalar level: the blocks widened one value at a time.
#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::scalar {

namespace {
// The dequantized block b of a row: out[32] = q * d (exact in fp32).
void widen(const CpuQuantLinear& w, const std::byte* row, int b, float* out) {
  if (w.quant == QuantType::Q8_0) dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(row) + b, out, kQuantBlock);
  else dequantize_row_q4_0(reinterpret_cast<const BlockQ4_0*>(row) + b, out, kQuantBlock);
}
}  // namespace

void quant_linear(const CpuQuantLinear& w, const float* x, int m, float* y, const float* bias, int j0,
                  int j1) {
  const int k = w.n_in, nb = k / kQuantBlock;
  float blk[kQuantBlock];
  for (int j = j0; j < j1; ++j) {
    for (int i = 0; i < m; ++i) y[static_cast<std::size_t>(i) * w.n_out + j] = bias ? bias[j] : 0.0f;
    for (int b = 0; b < nb; ++b) {
      widen(w, w.row(j), b, blk);
      for (int i = 0; i < m; ++i) {
        const float* xb = x + static_cast<std::size_t>(i) * k + b * kQuantBlock;
        float s = 0;
        for (int t = 0; t < kQuantBlock; ++t) s += blk[t] * xb[t];
        y[static_cast<std::size_t>(i) * w.n_out + j] += s;
      }
    }
  }
}

}  // namespace llmport::cpu::scalar
