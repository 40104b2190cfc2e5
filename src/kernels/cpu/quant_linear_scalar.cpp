// Quantized linear, scalar level: the panel layout read one value at a time, with the
// numerics every level shares (quant_linear.hpp): std::fma is the fused multiply-add the
// vector levels' vfmadd computes, so this level gives their bits too.
#include <cmath>

#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::scalar {

namespace {
// Element e of column c in panel block `pb`, as the signed quant (q8_0: q; q4_0: nibble - 8).
int quant_at(QuantType q, const std::byte* pb, int c, int e) {
  const auto* qs = reinterpret_cast<const uint8_t*>(pb + kPanelScaleBytes);
  if (q == QuantType::Q8_0) return qs[((e / 4) * kQuantPanel + c) * 4 + e % 4] - 128;
  const int byte = e % 16;
  const uint8_t v = qs[((byte / 4) * kQuantPanel + c) * 4 + byte % 4];
  return (e < 16 ? v & 0x0f : v >> 4) - 8;
}

float scale_at(const std::byte* pb, int c) { return f16_to_f32(reinterpret_cast<const uint16_t*>(pb)[c]); }

void store(const CpuQuantLinear& w, float* y, int i, int j, float acc, const float* bias) {
  y[static_cast<std::size_t>(i) * w.n_out + j] = bias ? acc + bias[j] : acc;
}
}  // namespace

void quant_linear(const CpuQuantLinear& w, const float* x, int m, float* y, const float* bias, int j0,
                  int j1) {
  const int k = w.n_in;
  for (int j = j0; j < j1; ++j) {
    const int p = j / kQuantPanel, c = j % kQuantPanel;
    for (int i = 0; i < m; ++i) {
      const float* xi = x + static_cast<std::size_t>(i) * k;
      float acc = 0;
      for (int b = 0; b < w.n_blocks(); ++b) {
        const std::byte* pb = w.panel_block(p, b);
        const float d = scale_at(pb, c);
        for (int e = 0; e < kQuantBlock; ++e)
          acc = std::fma(xi[b * kQuantBlock + e], static_cast<float>(quant_at(w.quant, pb, c, e)) * d, acc);
      }
      store(w, y, i, j, acc, bias);
    }
  }
}

void quant_linear_q8(const CpuQuantLinear& w, const ActQ8& x, int m, float* y, const float* bias, int j0,
                     int j1) {
  const int k = w.n_in, nb = w.n_blocks();
  for (int j = j0; j < j1; ++j) {
    const int p = j / kQuantPanel, c = j % kQuantPanel;
    for (int i = 0; i < m; ++i) {
      float acc = 0;
      for (int b = 0; b < nb; ++b) {
        const std::byte* pb = w.panel_block(p, b);
        const int8_t* xq = x.q + static_cast<std::size_t>(i) * k + static_cast<std::size_t>(b) * kQuantBlock;
        int32_t isum = 0;  // exact: |isum| <= 32 * 127 * 127 < 2^24
        for (int e = 0; e < kQuantBlock; ++e) isum += quant_at(w.quant, pb, c, e) * xq[e];
        acc = std::fma(static_cast<float>(isum), scale_at(pb, c) * x.d[static_cast<std::size_t>(i) * nb + b], acc);
      }
      store(w, y, i, j, acc, bias);
    }
  }
}

}  // namespace llmport::cpu::scalar
