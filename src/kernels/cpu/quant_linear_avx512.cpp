// Quantized linear, AVX-512 level: fp32 x times the panels' weights widened in registers,
// or q8 x blocks with the maddubs integer dot product on zmm (AVX-512BW without VNNI has no
// faster form); the tile loops are quant_panel_zmm.inc's.
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: clang has no -Wmaybe-uninitialized
// GCC 12 flags the _mm512_undefined_* inside its own intrinsics (cvtepi32_ps, cvtph_ps) as
// uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::avx512 {
namespace {

#include "kernels/cpu/quant_panel_zmm.inc"

// vpmaddubsw pairs into int16, vpmaddwd into int32. Its u8 operand must keep a pair below
// 2^15: q8_0 multiplies |q| (<= 127) by x with q's sign (2 * 127 * 127 < 32767), so it
// needs no offset; q4_0 multiplies the nibbles (<= 15) by x and takes 8 * sum(x) off.
struct MaddubsDot512 {
  template <QuantType Q>
  static __m512i init(int32_t sum_x) {
    return _mm512_set1_epi32(Q == QuantType::Q8_0 ? 0 : -8 * sum_x);
  }
  template <QuantType Q>
  static __m512i dot(__m512i acc, __m512i w, __m512i x) {
    __m512i a = w, b = x;
    if constexpr (Q == QuantType::Q8_0) {
      const __m512i q = _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80)));  // signed q
      a = _mm512_abs_epi8(q);
      b = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(q), _mm512_setzero_si512(), x);  // x * sign(q)
    }
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(a, b), _mm512_set1_epi16(1)));
  }
};

}  // namespace

void quant_linear(const CpuQuantLinear& w, const float* x, int m, float* y, const float* bias, int j0, int j1) {
  zmm::quant_linear_f32(w, x, m, y, bias, j0, j1);
}

void quant_linear_q8(const CpuQuantLinear& w, const ActQ8& x, int m, float* y, const float* bias, int j0, int j1) {
  zmm::quant_linear_q8<MaddubsDot512>(w, x, m, y, bias, j0, j1);
}

}  // namespace llmport::cpu::avx512
