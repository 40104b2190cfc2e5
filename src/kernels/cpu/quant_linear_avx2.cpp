// Quantized linear, AVX2 level: each block widened once into four ymm of fp32 weights
// (q * d, exact) and multiplied into up to 4 rows of x.
#include <immintrin.h>

#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::avx2 {
namespace {

inline __m256 widen8(__m128i bytes8, __m256 d) {  // low 8 int8 -> 8 fp32 * d
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes8)), d);
}

// Block at `blk` as fp32 weights w[0..3] = elements 0..7, 8..15, 16..23, 24..31.
inline void widen(QuantType q, const std::byte* blk, __m256 (&w)[4]) {
  __m128i lo, hi;  // int8 elements 0..15 and 16..31
  __m256 d;
  if (q == QuantType::Q8_0) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(blk);
    d = _mm256_set1_ps(_cvtsh_ss(b->d));
    lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
    hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 16));
  } else {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(blk);
    d = _mm256_set1_ps(_cvtsh_ss(b->d));
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
    const __m128i m4 = _mm_set1_epi8(0x0f), e8 = _mm_set1_epi8(8);
    lo = _mm_sub_epi8(_mm_and_si128(raw, m4), e8);
    hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), e8);
  }
  w[0] = widen8(lo, d);
  w[1] = widen8(_mm_srli_si128(lo, 8), d);
  w[2] = widen8(hi, d);
  w[3] = widen8(_mm_srli_si128(hi, 8), d);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int R>
void rows_tile(const CpuQuantLinear& w, const float* x, int i0, float* y, const float* bias, int j0,
               int j1) {
  const int k = w.n_in, nb = k / kQuantBlock;
  const std::size_t bb = quant_block_bytes(w.quant);
  for (int j = j0; j < j1; ++j) {
    __m256 a0[R], a1[R];
    for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
    const std::byte* row = w.row(j);
    for (int b = 0; b < nb; ++b) {
      __m256 wv[4];
      widen(w.quant, row + b * bb, wv);
      for (int r = 0; r < R; ++r) {
        const float* xb = x + static_cast<std::size_t>(i0 + r) * k + b * kQuantBlock;
        a0[r] = _mm256_fmadd_ps(wv[0], _mm256_loadu_ps(xb), a0[r]);
        a1[r] = _mm256_fmadd_ps(wv[1], _mm256_loadu_ps(xb + 8), a1[r]);
        a0[r] = _mm256_fmadd_ps(wv[2], _mm256_loadu_ps(xb + 16), a0[r]);
        a1[r] = _mm256_fmadd_ps(wv[3], _mm256_loadu_ps(xb + 24), a1[r]);
      }
    }
    for (int r = 0; r < R; ++r)
      y[static_cast<std::size_t>(i0 + r) * w.n_out + j] =
          hsum(_mm256_add_ps(a0[r], a1[r])) + (bias ? bias[j] : 0.0f);
  }
}

}  // namespace

void quant_linear(const CpuQuantLinear& w, const float* x, int m, float* y, const float* bias, int j0,
                  int j1) {
  int i = 0;
  for (; i + 4 <= m; i += 4) rows_tile<4>(w, x, i, y, bias, j0, j1);
  for (; i < m; ++i) rows_tile<1>(w, x, i, y, bias, j0, j1);
}

}  // namespace llmport::cpu::avx2
