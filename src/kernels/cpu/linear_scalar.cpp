// Portable scalar linear kernels over the packed panels (fallback for any x86-64 and
// the ground truth the vector levels are tested against through the reference).
#include <cstring>

#include "kernels/cpu/cpu_kernels.hpp"
#include "llmport/dtype.hpp"

namespace llmport::cpu::scalar {
namespace {

// K: 0 bf16, 1 f16, 2 f32.
template <int K>
void run_linear(const PackedView& w, const void* a, int lda, int m, float* y, const float* bias,
                int p0, int p1, const Blocking&) {
  for (int p = p0; p < p1; ++p) {
    const int c0 = p * kPanel;
    const int nc = w.n - c0 < kPanel ? w.n - c0 : kPanel;
    for (int i = 0; i < m; ++i) {
      float acc[kPanel];
      for (int c = 0; c < kPanel; ++c) acc[c] = (bias && c < nc) ? bias[c0 + c] : 0.0f;
      if constexpr (K == 0) {
        const uint16_t* ar = static_cast<const uint16_t*>(a) + static_cast<std::size_t>(i) * lda;
        const uint16_t* bp = static_cast<const uint16_t*>(w.data) + p * w.panel_stride;
        for (int kk = 0; kk < w.kp / 2; ++kk) {
          const float x0 = bf16_to_f32(ar[2 * kk]), x1 = bf16_to_f32(ar[2 * kk + 1]);
          const uint16_t* bk = bp + static_cast<std::size_t>(kk) * 32;
          for (int c = 0; c < kPanel; ++c)
            acc[c] += x0 * bf16_to_f32(bk[2 * c]) + x1 * bf16_to_f32(bk[2 * c + 1]);
        }
      } else {
        const float* ar = static_cast<const float*>(a) + static_cast<std::size_t>(i) * lda;
        for (int kk = 0; kk < w.k; ++kk) {
          const float x = ar[kk];
          for (int c = 0; c < kPanel; ++c) {
            const std::size_t off = p * w.panel_stride + static_cast<std::size_t>(kk) * 16 + c;
            const float wv = K == 1 ? f16_to_f32(static_cast<const uint16_t*>(w.data)[off])
                                    : static_cast<const float*>(w.data)[off];
            acc[c] += x * wv;
          }
        }
      }
      float* yr = y + static_cast<std::size_t>(i) * w.n + c0;
      for (int c = 0; c < nc; ++c) yr[c] = acc[c];
    }
  }
}

}  // namespace

void linear_bf16(const PackedView& w, const void* a, int lda, int m, float* y, const float* bias,
                 int p0, int p1, const Blocking& blk) {
  run_linear<0>(w, a, lda, m, y, bias, p0, p1, blk);
}
void linear_f16(const PackedView& w, const void* a, int lda, int m, float* y, const float* bias,
                int p0, int p1, const Blocking& blk) {
  run_linear<1>(w, a, lda, m, y, bias, p0, p1, blk);
}
void linear_f32(const PackedView& w, const void* a, int lda, int m, float* y, const float* bias,
                int p0, int p1, const Blocking& blk) {
  run_linear<2>(w, a, lda, m, y, bias, p0, p1, blk);
}

}  // namespace llmport::cpu::scalar
