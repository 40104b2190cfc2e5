#include "llmport/dtype.hpp"

#include <cmath>

#include "llmport/error.hpp"

namespace llmport {

std::size_t dtype_size(DType t) noexcept { return t == DType::F32 ? 4 : 2; }

std::string_view dtype_name(DType t) noexcept {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::BF16: return "bf16";
    case DType::F16: return "fp16";
  }
  return "?";
}

std::string_view dtype_safetensors_name(DType t) noexcept {
  switch (t) {
    case DType::F32: return "F32";
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "f32" || s == "float32" || s == "F32") return DType::F32;
  if (s == "bf16" || s == "bfloat16" || s == "BF16") return DType::BF16;
  if (s == "fp16" || s == "f16" || s == "float16" || s == "F16" || s == "half") return DType::F16;
  throw UsageError("unknown dtype '" + std::string(s) + "' (expected bf16, fp16 or fp32)");
}

uint16_t f32_to_f16(float f) noexcept {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return sign | 0x7e00u;          // NaN
  if (absu >= 0x477ff000u) return sign | 0x7c00u;         // overflow (incl. rounding up) -> inf
  if (absu < 0x38800000u) {                               // subnormal or zero in half
    float a;
    std::memcpy(&a, &absu, 4);
    // round to nearest even multiple of 2^-24
    float scaled = a * 16777216.0f;  // 2^24
    float r = std::nearbyint(scaled);
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t mant = absu & 0x7fffffu;
  uint32_t exp = (absu >> 23) - 112;
  uint32_t half = (exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half += 1;
  return sign | static_cast<uint16_t>(half);
}

void to_f32(DType t, const void* src, float* dst, std::size_t n) noexcept {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, n * 4);
      break;
    case DType::BF16: {
      auto* s = static_cast<const uint16_t*>(src);
      for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      break;
    }
    case DType::F16: {
      auto* s = static_cast<const uint16_t*>(src);
      for (std::size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      break;
    }
  }
}

void round_through(DType t, const float* src, float* dst, std::size_t n) noexcept {
  switch (t) {
    case DType::F32:
      if (dst != src) std::memcpy(dst, src, n * 4);
      break;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(f32_to_bf16(src[i]));
      break;
    case DType::F16:
      for (std::size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(f32_to_f16(src[i]));
      break;
  }
}

}  // namespace llmport
