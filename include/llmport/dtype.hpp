#pragma once
// Element types of weights and activations, and exact scalar conversions.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace llmport {

/// Storage dtype of a tensor. Activations and accumulation are always fp32.
enum class DType { F32, BF16, F16 };

/// Bytes per element: 4 for F32, 2 for BF16/F16.
std::size_t dtype_size(DType t) noexcept;
/// Canonical short name: "fp32", "bf16", "fp16".
std::string_view dtype_name(DType t) noexcept;
/// safetensors name: "F32", "BF16", "F16".
std::string_view dtype_safetensors_name(DType t) noexcept;
/// Parses user/config spellings: fp32|f32|float32|F32, bf16|bfloat16|BF16, fp16|f16|float16|F16.
/// Throws UsageError naming the value for anything else.
DType parse_dtype(std::string_view s);

/// bf16 -> fp32 is exact (bf16 is the top half of an fp32).
inline float bf16_to_f32(uint16_t h) noexcept {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
/// fp32 -> bf16 with round-to-nearest-even (NaN stays NaN), as torch's .to(torch.bfloat16).
inline uint16_t f32_to_bf16(float f) noexcept {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
/// IEEE half -> fp32 (exact, handles subnormals, inf, NaN). Inline: the scalar kernels
/// convert every fp16 weight they read through it.
inline float f16_to_f32(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: mant * 2^-24, exact in fp32
      const float f = static_cast<float>(mant) * 0x1p-24f;
      return sign ? -f : f;
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
/// fp32 -> IEEE half, round-to-nearest-even, overflow to inf.
uint16_t f32_to_f16(float f) noexcept;

/// Converts n elements of `src` (dtype t) to fp32 `dst`.
void to_f32(DType t, const void* src, float* dst, std::size_t n) noexcept;
/// Rounds n fp32 values through dtype t and back (what a kernel fed dtype-t inputs sees).
void round_through(DType t, const float* src, float* dst, std::size_t n) noexcept;

}  // namespace llmport
