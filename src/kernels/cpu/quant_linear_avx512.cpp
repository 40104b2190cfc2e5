// Quantized linear, AVX-512 level: each block widened once into two zmm of fp32 weights
// (q * d, exact) and multiplied into up to 4 rows of x; two accumulators per row hide the
// FMA latency in decode (m = 1).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: clang has no -Wmaybe-uninitialized
// GCC 12 flags the _mm512_undefined_* inside its own intrinsics (reduce_add, cvtepi8).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::avx512 {
namespace {

// Block at `blk` as fp32 weights: w0 = elements 0..15, w1 = 16..31.
inline void widen(QuantType q, const std::byte* blk, __m512& w0, __m512& w1) {
  if (q == QuantType::Q8_0) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(blk);
    const __m512 d = _mm512_set1_ps(_cvtsh_ss(b->d));
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 16));
    w0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), d);
    w1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), d);
    return;
  }
  const auto* b = reinterpret_cast<const BlockQ4_0*>(blk);
  const __m512 d = _mm512_set1_ps(_cvtsh_ss(b->d));
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
  const __m128i m4 = _mm_set1_epi8(0x0f), e8 = _mm_set1_epi8(8);
  const __m128i lo = _mm_sub_epi8(_mm_and_si128(raw, m4), e8);  // elements 0..15
  const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), e8);  // 16..31
  w0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), d);
  w1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), d);
}

// Rows [i0, i0 + R) of x against outputs [j0, j1).
template <int R>
void rows_tile(const CpuQuantLinear& w, const float* x, int i0, float* y, const float* bias, int j0,
               int j1) {
  const int k = w.n_in, nb = k / kQuantBlock;
  const std::size_t bb = quant_block_bytes(w.quant);
  for (int j = j0; j < j1; ++j) {
    __m512 a0[R], a1[R];
    for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm512_setzero_ps();
    const std::byte* row = w.row(j);
    for (int b = 0; b < nb; ++b) {
      __m512 w0, w1;
      widen(w.quant, row + b * bb, w0, w1);
      for (int r = 0; r < R; ++r) {
        const float* xb = x + static_cast<std::size_t>(i0 + r) * k + b * kQuantBlock;
        a0[r] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xb), a0[r]);
        a1[r] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xb + 16), a1[r]);
      }
    }
    for (int r = 0; r < R; ++r)
      y[static_cast<std::size_t>(i0 + r) * w.n_out + j] =
          _mm512_reduce_add_ps(_mm512_add_ps(a0[r], a1[r])) + (bias ? bias[j] : 0.0f);
  }
}

}  // namespace

void quant_linear(const CpuQuantLinear& w, const float* x, int m, float* y, const float* bias, int j0,
                  int j1) {
  int i = 0;
  for (; i + 4 <= m; i += 4) rows_tile<4>(w, x, i, y, bias, j0, j1);
  for (; i < m; ++i) rows_tile<1>(w, x, i, y, bias, j0, j1);
}

}  // namespace llmport::cpu::avx512
