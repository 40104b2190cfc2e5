// Quantized linear, scalar level: the blocks widened one value at a time (fp32 x), or
// integer block dot products with q8 x blocks.
#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::scalar {

namespace {
// The dequantized block b of a row: out[32] = q * d (exact in fp32).
void widen(const CpuQuantLinear& w, const std::byte* row, int b, float* out) {
  if (w.quant == QuantType::Q8_0) dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(row) + b, out, kQuantBlock);
  else dequantize_row_q4_0(reinterpret_cast<const BlockQ4_0*>(row) + b, out, kQuantBlock);
}

// Block b of a row: its 32 quants as signed integers (q4_0: nibble - 8) and its scale.
float block_quants(const CpuQuantLinear& w, const std::byte* row, int b, int* q) {
  if (w.quant == QuantType::Q8_0) {
    const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(row)[b];
    for (int t = 0; t < kQuantBlock; ++t) q[t] = blk.qs[t];
    return f16_to_f32(blk.d);
  }
  const BlockQ4_0& blk = reinterpret_cast<const BlockQ4_0*>(row)[b];
  for (int t = 0; t < kQuantBlock / 2; ++t) {
    q[t] = (blk.qs[t] & 0x0f) - 8;
    q[t + kQuantBlock / 2] = (blk.qs[t] >> 4) - 8;
  }
  return f16_to_f32(blk.d);
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

void quant_linear_q8(const CpuQuantLinear& w, const ActQ8& x, int m, float* y, const float* bias, int j0,
                     int j1) {
  const int k = w.n_in, nb = k / kQuantBlock;
  int q[kQuantBlock];
  for (int j = j0; j < j1; ++j) {
    for (int i = 0; i < m; ++i) y[static_cast<std::size_t>(i) * w.n_out + j] = 0.0f;
    for (int b = 0; b < nb; ++b) {
      const float dw = block_quants(w, w.row(j), b, q);
      for (int i = 0; i < m; ++i) {
        const int8_t* xq = x.q + static_cast<std::size_t>(i) * k + static_cast<std::size_t>(b) * kQuantBlock;
        int sumi = 0;  // exact: |sumi| <= 32 * 127 * 127 < 2^24
        for (int t = 0; t < kQuantBlock; ++t) sumi += q[t] * xq[t];
        y[static_cast<std::size_t>(i) * w.n_out + j] +=
            dw * x.d[static_cast<std::size_t>(i) * nb + b] * static_cast<float>(sumi);
      }
    }
    if (bias)
      for (int i = 0; i < m; ++i) y[static_cast<std::size_t>(i) * w.n_out + j] += bias[j];
  }
}

}  // namespace llmport::cpu::scalar
