// AVX2 + FMA linear kernels over the same packed panels as AVX-512: one 16-column panel
// is two ymm halves; bf16 is emulated with shift/mask + FMA; fp16 through vcvtph2ps.
// Micro-kernel: up to 4 rows x 1 panel (8 ymm accumulators); np is ignored.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/cpu_kernels.hpp"

namespace llmport::cpu::avx2 {
namespace {

inline __m256i half_mask(int cols_valid) {  // lanes < cols_valid set
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(cols_valid), idx);
}

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

struct TileArgs {
  const void* a;
  int lda;
  const void* b;  // this panel at k step ks
  int kn;
  float* c;
  int ldc;
  int cols_valid;
  bool first;
  const float* bias;
};

// K: 0 bf16 (k pairs), 1 f16, 2 f32.
template <int MR, int K>
void ukr(const TileArgs& t) {
  __m256 acc[MR][2];
  const __m256i mk[2] = {half_mask(t.cols_valid), half_mask(t.cols_valid - 8)};
  for (int i = 0; i < MR; ++i)
    for (int h = 0; h < 2; ++h) {
      if (!t.first)
        acc[i][h] = _mm256_maskload_ps(t.c + static_cast<std::size_t>(i) * t.ldc + 8 * h, mk[h]);
      else if (t.bias)
        acc[i][h] = _mm256_maskload_ps(t.bias + 8 * h, mk[h]);
      else
        acc[i][h] = _mm256_setzero_ps();
    }
  if constexpr (K == 0) {
    const uint16_t* a = static_cast<const uint16_t*>(t.a);
    const uint16_t* b = static_cast<const uint16_t*>(t.b);
    const __m256i hi = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
    for (int kk = 0; kk < t.kn; ++kk) {
      __m256 blo[2], bhi[2];
      for (int h = 0; h < 2; ++h) {
        const __m256i bv = _mm256_load_si256(
            reinterpret_cast<const __m256i*>(b + static_cast<std::size_t>(kk) * 32 + 16 * h));
        blo[h] = _mm256_castsi256_ps(_mm256_slli_epi32(bv, 16));
        bhi[h] = _mm256_castsi256_ps(_mm256_and_si256(bv, hi));
      }
      for (int i = 0; i < MR; ++i) {
        const __m256i av =
            _mm256_set1_epi32(load_i32(a + static_cast<std::size_t>(i) * t.lda + 2 * kk));
        const __m256 alo = _mm256_castsi256_ps(_mm256_slli_epi32(av, 16));
        const __m256 ahi = _mm256_castsi256_ps(_mm256_and_si256(av, hi));
        for (int h = 0; h < 2; ++h) {
          acc[i][h] = _mm256_fmadd_ps(alo, blo[h], acc[i][h]);
          acc[i][h] = _mm256_fmadd_ps(ahi, bhi[h], acc[i][h]);
        }
      }
    }
  } else {
    const float* a = static_cast<const float*>(t.a);
    for (int kk = 0; kk < t.kn; ++kk) {
      __m256 bv[2];
      for (int h = 0; h < 2; ++h) {
        if constexpr (K == 1) {
          const uint16_t* bp =
              static_cast<const uint16_t*>(t.b) + static_cast<std::size_t>(kk) * 16 + 8 * h;
          bv[h] = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(bp)));
        } else {
          bv[h] = _mm256_load_ps(static_cast<const float*>(t.b) +
                                 static_cast<std::size_t>(kk) * 16 + 8 * h);
        }
      }
      for (int i = 0; i < MR; ++i) {
        const __m256 av = _mm256_set1_ps(a[static_cast<std::size_t>(i) * t.lda + kk]);
        for (int h = 0; h < 2; ++h) acc[i][h] = _mm256_fmadd_ps(av, bv[h], acc[i][h]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int h = 0; h < 2; ++h)
      _mm256_maskstore_ps(t.c + static_cast<std::size_t>(i) * t.ldc + 8 * h, mk[h], acc[i][h]);
}

inline int imin(int a, int b) { return a < b ? a : b; }
inline int imax(int a, int b) { return a > b ? a : b; }

template <int K>
void run_linear(const PackedView& w, const void* a, int lda, int m, float* y, const float* bias,
                int p0, int p1, const Blocking& blk) {
  const std::size_t esz = K == 2 ? 4 : 2;
  const int k_per_step = K == 0 ? 2 : 1;
  const std::size_t a_step = K == 0 ? 2 : 1;
  const std::size_t b_step = K == 0 ? 32 : 16;
  const std::size_t a_esz = K == 0 ? 2 : 4;
  const int ksteps = w.kp / k_per_step;
  const int mr = imax(1, imin(blk.mr, kAvx2MaxMr));
  const int kcs = m == 1 ? ksteps : imax(1, blk.kc / k_per_step);
  const int mc = imax(mr, blk.mc / mr * mr);
  const int ncp = imax(1, blk.nc / 16);
  const char* abase = static_cast<const char*>(a);
  const char* bbase = static_cast<const char*>(w.data);
  for (int jc = p0; jc < p1; jc += ncp) {
    const int jend = imin(jc + ncp, p1);
    for (int ks = 0; ks < ksteps; ks += kcs) {
      const int kn = imin(kcs, ksteps - ks);
      for (int ic = 0; ic < m; ic += mc) {
        const int iend = imin(ic + mc, m);
        for (int jr = jc; jr < jend; ++jr) {
          for (int ir = ic; ir < iend; ir += mr) {
            const int rn = imin(mr, iend - ir);
            TileArgs t;
            t.a = abase + (static_cast<std::size_t>(ir) * lda + ks * a_step) * a_esz;
            t.lda = lda;
            t.b = bbase + (static_cast<std::size_t>(jr) * w.panel_stride + ks * b_step) * esz;
            t.kn = kn;
            t.c = y + static_cast<std::size_t>(ir) * w.n + static_cast<std::size_t>(jr) * 16;
            t.ldc = w.n;
            t.cols_valid = w.n - jr * 16;
            t.first = ks == 0;
            t.bias = bias ? bias + static_cast<std::size_t>(jr) * 16 : nullptr;
            switch (rn) {
              case 1: ukr<1, K>(t); break;
              case 2: ukr<2, K>(t); break;
              case 3: ukr<3, K>(t); break;
              default: ukr<4, K>(t); break;
            }
          }
        }
      }
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

}  // namespace llmport::cpu::avx2
