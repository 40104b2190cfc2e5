// Quantized linear, AVX2 level: fp32 x times each block widened once into four ymm of fp32
// weights (q * d, exact), or q8 x blocks with vpmaddubsw/vpmaddwd integer dot products; the
// tile loop is quant_linear_impl.inc's.
#include <immintrin.h>

#include "kernels/cpu/quant_linear.hpp"

namespace llmport::cpu::avx2 {
namespace {

#include "kernels/cpu/quant_linear_impl.inc"

inline __m256 widen8(__m128i bytes8, __m256 d) {  // low 8 int8 -> 8 fp32 * d
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes8)), d);
}

struct F32Ops {
  struct Input {
    const float* x;
    int k;
  };
  struct Block {
    __m256 w[4];  // elements 0..7, 8..15, 16..23, 24..31
  };
  struct Acc {
    __m256 lo, hi;
  };
  static Acc zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  template <QuantType Q>
  static Block load(const std::byte* blk) {
    float d;
    const __m256i q = block_quants<Q>(blk, &d);
    const __m256 dv = _mm256_set1_ps(d);
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    return {{widen8(lo, dv), widen8(_mm_srli_si128(lo, 8), dv), widen8(hi, dv), widen8(_mm_srli_si128(hi, 8), dv)}};
  }
  static void madd(const Block& w, const Input& in, int row, int b, Acc& a) {
    const float* xb = in.x + static_cast<std::size_t>(row) * in.k + static_cast<std::size_t>(b) * kQuantBlock;
    a.lo = _mm256_fmadd_ps(w.w[0], _mm256_loadu_ps(xb), a.lo);
    a.hi = _mm256_fmadd_ps(w.w[1], _mm256_loadu_ps(xb + 8), a.hi);
    a.lo = _mm256_fmadd_ps(w.w[2], _mm256_loadu_ps(xb + 16), a.lo);
    a.hi = _mm256_fmadd_ps(w.w[3], _mm256_loadu_ps(xb + 24), a.hi);
  }
  static float reduce(const Acc& e, const Acc& o) {
    return hsum256(_mm256_add_ps(_mm256_add_ps(e.lo, e.hi), _mm256_add_ps(o.lo, o.hi)));
  }
};

}  // namespace

void quant_linear(const CpuQuantLinear& w, const float* x, int m, float* y, const float* bias, int j0, int j1) {
  quant_rows<F32Ops>(w, F32Ops::Input{x, w.n_in}, m, y, bias, j0, j1);
}

void quant_linear_q8(const CpuQuantLinear& w, const ActQ8& x, int m, float* y, const float* bias, int j0, int j1) {
  quant_linear_q8_impl<MaddubsDot>(w, x, m, y, bias, j0, j1);
}

}  // namespace llmport::cpu::avx2
