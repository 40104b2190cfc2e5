// vpdpbusd throughput loop for the int8 dot peak of the roofline (AVX512_VNNI CPUs).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/cpu_peak.hpp"

namespace llmport::cpu {
double peak_int8_avx512vnni(long iters) {
  __m512i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  __m512i s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_epi32(s, acc[i]);
  volatile int32_t sink = _mm512_reduce_add_epi32(s);
  (void)sink;
  return 128.0 * 12.0 * static_cast<double>(iters);  // 64 multiply-adds per instruction
}
}  // namespace llmport::cpu
