// Quantized linear, AVX-512 level: fp32 x times each block widened once into two zmm of
// fp32 weights (q * d, exact; quant_linear_impl.inc's tile loop), or q8 x blocks with the
// maddubs integer dot product on zmm (AVX-512BW without VNNI has no faster form;
// quant_linear_q8_zmm.inc's tile loop).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: clang has no -Wmaybe-uninitialized
// GCC 12 flags the _mm512_undefined_* inside its own intrinsics (reduce_add, cvtepi8,
// inserti64x4, cvtepi32_ps, extract*).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::avx512 {
namespace {

#include "kernels/cpu/quant_linear_impl.inc"
#include "kernels/cpu/quant_linear_q8_zmm.inc"

// vpmaddubsw pairs into int16 (no pair exceeds 2 * 127 * 127 < 32767), vpmaddwd into int32.
struct MaddubsDot512 {
  static __m512i dot(__m512i src, __m512i a, __m512i b) {
    return _mm512_add_epi32(src, _mm512_madd_epi16(_mm512_maddubs_epi16(a, b), _mm512_set1_epi16(1)));
  }
};

struct F32Ops {
  struct Input {
    const float* x;
    int k;
  };
  struct Block {
    __m512 w0, w1;  // elements 0..15, 16..31
  };
  using Acc = __m512;
  static Acc zero() { return _mm512_setzero_ps(); }
  template <QuantType Q>
  static Block load(const std::byte* blk) {
    float d;
    const __m256i q = block_quants<Q>(blk, &d);
    const __m512 dv = _mm512_set1_ps(d);
    return {_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q))), dv),
            _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1))), dv)};
  }
  static void madd(const Block& w, const Input& in, int row, int b, Acc& a) {
    const float* xb = in.x + static_cast<std::size_t>(row) * in.k + static_cast<std::size_t>(b) * kQuantBlock;
    a = _mm512_fmadd_ps(w.w0, _mm512_loadu_ps(xb), a);
    a = _mm512_fmadd_ps(w.w1, _mm512_loadu_ps(xb + 16), a);
  }
  static float reduce(const Acc& e, const Acc& o) { return _mm512_reduce_add_ps(_mm512_add_ps(e, o)); }
};

}  // namespace

void quant_linear(const CpuQuantLinear& w, const float* x, int m, float* y, const float* bias, int j0, int j1) {
  quant_rows<F32Ops>(w, F32Ops::Input{x, w.n_in}, m, y, bias, j0, j1);
}

void quant_linear_q8(const CpuQuantLinear& w, const ActQ8& x, int m, float* y, const float* bias, int j0, int j1) {
  zmm::quant_linear_q8<MaddubsDot512>(w, x, m, y, bias, j0, j1);
}

}  // namespace llmport::cpu::avx512
