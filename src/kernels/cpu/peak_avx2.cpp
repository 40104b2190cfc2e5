// fp32 FMA throughput loop and streaming read with ymm registers (roofline).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/cpu_peak.hpp"

namespace llmport::cpu {
double peak_f32_avx2(long iters) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  volatile float sink = out[0];
  (void)sink;
  return 16.0 * 12.0 * static_cast<double>(iters);
}

double peak_int8_avx2(long iters) {
  __m256i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_epi32(i);
  __m256i a = _mm256_set1_epi8(3);
  const __m256i b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) {
      // The operands are loop-invariant: without this the compiler computes the products
      // once and times only the adds.
      __asm__ volatile("" : "+x"(a));
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
    }
  __m256i s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_epi32(s, acc[i]);
  volatile int32_t sink = _mm256_extract_epi32(s, 0);
  (void)sink;
  return 64.0 * 12.0 * static_cast<double>(iters);  // 32 multiply-adds per three instructions
}

uint64_t read_xor_streams_avx2(const void* data, std::size_t bytes, int streams) {
  streams = streams < 1 ? 1 : (streams > 8 ? 8 : streams);
  const auto* x = static_cast<const unsigned char*>(data);
  const std::size_t per = bytes / static_cast<std::size_t>(streams) / 32 * 32;
  __m256i acc[8];
  for (__m256i& a : acc) a = _mm256_setzero_si256();
  for (std::size_t i = 0; i < per; i += 32)
    for (int j = 0; j < streams; ++j)
      acc[j] = _mm256_xor_si256(acc[j], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + j * per + i)));
  __m256i t = acc[0];
  for (int j = 1; j < 8; ++j) t = _mm256_xor_si256(t, acc[j]);
  alignas(64) uint64_t lanes[32 / 8];
  std::memcpy(lanes, &t, sizeof t);
  uint64_t r = 0;
  for (uint64_t v : lanes) r ^= v;
  for (std::size_t i = per * static_cast<std::size_t>(streams); i < bytes; ++i) r ^= x[i];
  return r;
}
}  // namespace llmport::cpu
