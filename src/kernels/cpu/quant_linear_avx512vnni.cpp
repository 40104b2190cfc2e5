// Quantized linear on q8 x blocks with AVX-512 VNNI: vpdpbusd sums four u8 weights times s8
// activations per int32 lane into its accumulator in one instruction. Used at the
// avx512bf16 level where the CPU has AVX512_VNNI (quant_linear_q8_kernel); the tile loop is
// quant_panel_zmm.inc's.
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

namespace llmport::cpu::avx512vnni {
namespace {

#include "kernels/cpu/quant_panel_zmm.inc"

// The weights' u8 offset (q8_0: q + 128; q4_0: nibble = q + 8) comes off at the start:
// sum((q + o) * x) - o * sum(x) = sum(q * x).
struct VnniDot {
  template <QuantType Q>
  static __m512i init(int32_t sum_x) {
    return _mm512_set1_epi32(-(Q == QuantType::Q8_0 ? 128 : 8) * sum_x);
  }
  template <QuantType Q>
  static __m512i dot(__m512i acc, __m512i w, __m512i x) {
    return _mm512_dpbusd_epi32(acc, w, x);
  }
};

}  // namespace

void quant_linear_q8(const CpuQuantLinear& w, const ActQ8& x, int m, float* y, const float* bias, int j0, int j1) {
  zmm::quant_linear_q8<VnniDot>(w, x, m, y, bias, j0, j1);
}

}  // namespace llmport::cpu::avx512vnni
