// Quantized linear on q8 x blocks with AVX-512 VNNI: vpdpbusd sums four u8 * s8 products
// per int32 lane into its accumulator in one instruction. Used at the avx512bf16 level where
// the CPU has AVX512_VNNI (quant_linear_q8_kernel); the tile loop is quant_linear_q8_zmm.inc's.
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: clang has no -Wmaybe-uninitialized
// GCC 12 flags the _mm512_undefined_* inside its own intrinsics (inserti64x4, cvtepi32_ps,
// extract*) as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::avx512vnni {
namespace {

#include "kernels/cpu/quant_linear_impl.inc"
#include "kernels/cpu/quant_linear_q8_zmm.inc"

struct VnniDot {
  static __m512i dot(__m512i src, __m512i a, __m512i b) { return _mm512_dpbusd_epi32(src, a, b); }
};

}  // namespace

void quant_linear_q8(const CpuQuantLinear& w, const ActQ8& x, int m, float* y, const float* bias, int j0, int j1) {
  zmm::quant_linear_q8<VnniDot>(w, x, m, y, bias, j0, j1);
}

}  // namespace llmport::cpu::avx512vnni
