// fp32 FMA throughput loop and streaming read with zmm registers (roofline).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/cpu_peak.hpp"

namespace llmport::cpu {
double peak_f32_avx512(long iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  volatile float sink = _mm512_reduce_add_ps(s);
  (void)sink;
  return 32.0 * 12.0 * static_cast<double>(iters);
}

double peak_int8_avx512(long iters) {
  __m512i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_epi32(i);
  __m512i a = _mm512_set1_epi8(3);
  const __m512i b = _mm512_set1_epi8(-2), ones = _mm512_set1_epi16(1);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) {
      // The operands are loop-invariant: without this the compiler computes the products
      // once and times only the adds.
      __asm__ volatile("" : "+v"(a));
      acc[i] = _mm512_add_epi32(acc[i], _mm512_madd_epi16(_mm512_maddubs_epi16(a, b), ones));
    }
  __m512i s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_epi32(s, acc[i]);
  volatile int32_t sink = _mm512_reduce_add_epi32(s);
  (void)sink;
  return 128.0 * 12.0 * static_cast<double>(iters);  // 64 multiply-adds per three instructions
}

uint64_t read_xor_streams_avx512(const void* data, std::size_t bytes, int streams) {
  streams = streams < 1 ? 1 : (streams > 8 ? 8 : streams);
  const auto* x = static_cast<const unsigned char*>(data);
  const std::size_t per = bytes / static_cast<std::size_t>(streams) / 64 * 64;
  __m512i acc[8];
  for (__m512i& a : acc) a = _mm512_setzero_si512();
  for (std::size_t i = 0; i < per; i += 64)
    for (int j = 0; j < streams; ++j)
      acc[j] = _mm512_xor_si512(acc[j], _mm512_loadu_si512(reinterpret_cast<const void*>(x + j * per + i)));
  __m512i t = acc[0];
  for (int j = 1; j < 8; ++j) t = _mm512_xor_si512(t, acc[j]);
  alignas(64) uint64_t lanes[64 / 8];
  std::memcpy(lanes, &t, sizeof t);
  uint64_t r = 0;
  for (uint64_t v : lanes) r ^= v;
  for (std::size_t i = per * static_cast<std::size_t>(streams); i < bytes; ++i) r ^= x[i];
  return r;
}
}  // namespace llmport::cpu
