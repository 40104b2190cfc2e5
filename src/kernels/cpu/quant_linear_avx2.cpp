// Quantized linear, AVX2 level: the panels (quant_linear.hpp) in ymm halves of 8 columns
// (bytes 0..31 of each 64-byte group are columns 0..7, 32..63 columns 8..15). fp32 x times
// the weights widened in registers, or q8 x blocks with vpmaddubsw/vpmaddwd integer dot
// products. Each lane computes what the scalar level computes for its column.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::avx2 {
namespace {

constexpr int kHalf = kQuantPanel / 2;

// Half panel u: columns 8u..8u+7, the half u % 2 of panel u / 2.
struct Half {
  const uint8_t* qs;  // this half's first group (its 32 bytes start every 64)
  __m256 d;
};

inline Half half_block(const CpuQuantLinear& w, int u, int b) {
  const std::byte* pb = w.panel_block(u / 2, b);
  const int h = u % 2;
  return {reinterpret_cast<const uint8_t*>(pb + kPanelScaleBytes) + 32 * h,
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb) + h))};
}

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline void store_half(const CpuQuantLinear& w, float* y, int row, int u, __m256 acc, const float* bias) {
  const int col = u * kHalf, left = std::min(kHalf, w.n_out - col);
  float* out = y + static_cast<std::size_t>(row) * w.n_out + col;
  if (left == kHalf) {
    if (bias) acc = _mm256_add_ps(acc, _mm256_loadu_ps(bias + col));
    _mm256_storeu_ps(out, acc);
    return;
  }
  alignas(32) float v[kHalf];
  _mm256_store_ps(v, acc);
  for (int c = 0; c < left; ++c) out[c] = bias ? v[c] + bias[col + c] : v[c];
}

// Sum of four u8 * s8 products per int32 lane; a pair must stay below 2^15 (maddubs
// saturates), which |q| (q8_0) and nibbles (q4_0) keep.
inline __m256i dot4(__m256i acc, __m256i a_u8, __m256i b_s8) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a_u8, b_s8), _mm256_set1_epi16(1)));
}

// q8 activations: rows [i0, i0 + R) x half panels [u0, u0 + J).
template <QuantType Q, int R, int J>
void q8_tile(const CpuQuantLinear& w, const ActQ8& x, int i0, int u0, float* y, const float* bias) {
  const int k = w.n_in, nb = w.n_blocks();
  __m256 acc[R][J];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < J; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    Half hw[J];
    for (int c = 0; c < J; ++c) hw[c] = half_block(w, u0 + c, b);
    const int8_t* xq[R];
    __m256i isum[R][J];
    for (int r = 0; r < R; ++r) {
      xq[r] = x.q + static_cast<std::size_t>(i0 + r) * k + static_cast<std::size_t>(b) * kQuantBlock;
      // q4_0 multiplies the nibbles (q + 8) and takes 8 * sum(x) off; q8_0 needs no offset.
      const int32_t start = Q == QuantType::Q8_0 ? 0 : -8 * x.s[static_cast<std::size_t>(i0 + r) * nb + b];
      for (int c = 0; c < J; ++c) isum[r][c] = _mm256_set1_epi32(start);
    }
    if constexpr (Q == QuantType::Q8_0) {
      for (int g = 0; g < kQuantBlock / 4; ++g) {
        __m256i aw[J], qw[J];
        for (int c = 0; c < J; ++c) {
          qw[c] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(hw[c].qs + 64 * g)),
                                   _mm256_set1_epi8(static_cast<char>(0x80)));  // signed q
          aw[c] = _mm256_sign_epi8(qw[c], qw[c]);                               // |q|
        }
        for (int r = 0; r < R; ++r) {
          const __m256i xv = bcast4(xq[r] + 4 * g);
          for (int c = 0; c < J; ++c) isum[r][c] = dot4(isum[r][c], aw[c], _mm256_sign_epi8(xv, qw[c]));
        }
      }
    } else {
      const __m256i m4 = _mm256_set1_epi8(0x0f);
      for (int g = 0; g < kQuantBlock / 8; ++g) {
        __m256i lo[J], hi[J];
        for (int c = 0; c < J; ++c) {
          const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hw[c].qs + 64 * g));
          lo[c] = _mm256_and_si256(raw, m4);
          hi[c] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
        }
        for (int r = 0; r < R; ++r) {
          const __m256i xlo = bcast4(xq[r] + 4 * g), xhi = bcast4(xq[r] + 16 + 4 * g);
          for (int c = 0; c < J; ++c) isum[r][c] = dot4(dot4(isum[r][c], lo[c], xlo), hi[c], xhi);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256 dx = _mm256_set1_ps(x.d[static_cast<std::size_t>(i0 + r) * nb + b]);
      for (int c = 0; c < J; ++c)
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][c]), _mm256_mul_ps(hw[c].d, dx), acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < J; ++c) store_half(w, y, i0 + r, u0 + c, acc[r][c], bias);
}

// Four elements' weights of a half panel from a group's 32 bytes, widened and scaled.
template <QuantType Q>
inline void widen_group(const uint8_t* group, __m256 d, bool high, __m256 out[4]) {
  __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group));
  if constexpr (Q == QuantType::Q4_0)
    raw = _mm256_and_si256(high ? _mm256_srli_epi16(raw, 4) : raw, _mm256_set1_epi8(0x0f));
  const __m256i offset = _mm256_set1_epi32(Q == QuantType::Q8_0 ? 128 : 8);
  for (int t = 0; t < 4; ++t) {
    const __m256i v = _mm256_and_si256(_mm256_srli_epi32(raw, 8 * t), _mm256_set1_epi32(0xff));
    out[t] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, offset)), d);
  }
}

// fp32 activations: rows [i0, i0 + R) x half panels [u0, u0 + J), elements in order.
template <QuantType Q, int R, int J>
void f32_tile(const CpuQuantLinear& w, const float* x, int i0, int u0, float* y, const float* bias) {
  const int k = w.n_in, nb = w.n_blocks();
  __m256 acc[R][J];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < J; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    Half hw[J];
    for (int c = 0; c < J; ++c) hw[c] = half_block(w, u0 + c, b);
    for (int step = 0; step < kQuantBlock / 4; ++step) {  // element 4 * step + t
      __m256 wv[J][4];
      const int g = Q == QuantType::Q8_0 ? step : step % 4;
      for (int c = 0; c < J; ++c) widen_group<Q>(hw[c].qs + 64 * g, hw[c].d, step >= 4, wv[c]);
      for (int r = 0; r < R; ++r) {
        const float* xe = x + static_cast<std::size_t>(i0 + r) * k + static_cast<std::size_t>(b) * kQuantBlock + 4 * step;
        for (int t = 0; t < 4; ++t) {
          const __m256 xv = _mm256_set1_ps(xe[t]);
          for (int c = 0; c < J; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c][t], acc[r][c]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < J; ++c) store_half(w, y, i0 + r, u0 + c, acc[r][c], bias);
}

// As quant_panel_zmm.inc's panel_loop, in half panels: 4-row tiles of 2, single rows 4 at
// a time. `tile` is called as tile.template operator()<R, J>(row, half).
template <class F>
void half_loop(int n_out, int m, int j0, int j1, const F& tile) {
  constexpr int kRowBlock = 64;
  const int u0 = j0 / kHalf, u1 = (std::min(j1, n_out) + kHalf - 1) / kHalf;
  for (int ib = 0; ib < m; ib += kRowBlock) {
    const int ie = std::min(m, ib + kRowBlock);
    int i = ib;
    for (; i + 4 <= ie; i += 4) {
      int u = u0;
      for (; u + 2 <= u1; u += 2) tile.template operator()<4, 2>(i, u);
      for (; u < u1; ++u) tile.template operator()<4, 1>(i, u);
    }
    for (; i < ie; ++i) {
      int u = u0;
      for (; u + 4 <= u1; u += 4) tile.template operator()<1, 4>(i, u);
      for (; u < u1; ++u) tile.template operator()<1, 1>(i, u);
    }
  }
}

template <QuantType Q>
void q8_linear(const CpuQuantLinear& w, const ActQ8& x, int m, float* y, const float* bias, int j0, int j1) {
  half_loop(w.n_out, m, j0, j1, [&]<int R, int J>(int i, int u) { q8_tile<Q, R, J>(w, x, i, u, y, bias); });
}

template <QuantType Q>
void f32_linear(const CpuQuantLinear& w, const float* x, int m, float* y, const float* bias, int j0, int j1) {
  half_loop(w.n_out, m, j0, j1, [&]<int R, int J>(int i, int u) { f32_tile<Q, R, J>(w, x, i, u, y, bias); });
}

}  // namespace

void quant_linear(const CpuQuantLinear& w, const float* x, int m, float* y, const float* bias, int j0, int j1) {
  if (w.quant == QuantType::Q8_0) f32_linear<QuantType::Q8_0>(w, x, m, y, bias, j0, j1);
  else f32_linear<QuantType::Q4_0>(w, x, m, y, bias, j0, j1);
}

void quant_linear_q8(const CpuQuantLinear& w, const ActQ8& x, int m, float* y, const float* bias, int j0, int j1) {
  if (w.quant == QuantType::Q8_0) q8_linear<QuantType::Q8_0>(w, x, m, y, bias, j0, j1);
  else q8_linear<QuantType::Q4_0>(w, x, m, y, bias, j0, j1);
}

}  // namespace llmport::cpu::avx2
