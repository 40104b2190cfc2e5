// Quantized linear on q8 x blocks with AVX-512 VNNI: vpdpbusd (ymm, AVX512_VL) sums four
// u8 * s8 products per int32 lane in one instruction. Used at the avx512bf16 level where the
// CPU has AVX512_VNNI (quant_linear_q8_kernel); the tile loop is quant_linear_impl.inc's.
#include <immintrin.h>

#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::avx512vnni {
namespace {

#include "kernels/cpu/quant_linear_impl.inc"

struct VnniDot {
  static __m256i dot(__m256i ax, __m256i sw) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), ax, sw); }
};

}  // namespace

void quant_linear_q8(const CpuQuantLinear& w, const ActQ8& x, int m, float* y, const float* bias, int j0, int j1) {
  quant_linear_q8_impl<VnniDot>(w, x, m, y, bias, j0, j1);
}

}  // namespace llmport::cpu::avx512vnni
