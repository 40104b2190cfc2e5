// ggml's reference Q8_0 / Q4_0 block quantizers (llmport/quant.hpp gives the formulas).
#include "llmport/quant.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "llmport/dtype.hpp"
#include "llmport/error.hpp"

namespace llmport {
namespace {

// x / d as ggml computes it, x * id. Where 1 / d overflows (a block whose largest magnitude
// is below ~3.7e-37 (q8_0) / 2.4e-38 (q4_0), e.g. fp32 denormals) x * id is inf or NaN and
// its conversion to an integer is undefined (ggml's reference too); x / d is the quotient
// id stands for, finite. Such a block's fp16 scale is 0, so it dequantizes to zeros.
float quotient(float x, float d, float id, bool tiny) { return tiny ? x / d : x * id; }

void check_k(int64_t k) {
  if (k % kQuantBlock != 0)
    throw UsageError("quantize: row of " + std::to_string(k) + " values is not a multiple of " +
                     std::to_string(kQuantBlock));
}

}  // namespace

std::string_view quant_name(QuantType q) noexcept {
  switch (q) {
    case QuantType::None: return "none";
    case QuantType::Q8_0: return "q8_0";
    case QuantType::Q4_0: return "q4_0";
  }
  return "?";
}

QuantType parse_quant(std::string_view s) noexcept {
  if (s == "q8_0" || s == "Q8_0") return QuantType::Q8_0;
  if (s == "q4_0" || s == "Q4_0") return QuantType::Q4_0;
  return QuantType::None;
}

std::size_t quant_block_bytes(QuantType q) noexcept {
  switch (q) {
    case QuantType::None: return 0;
    case QuantType::Q8_0: return sizeof(BlockQ8_0);
    case QuantType::Q4_0: return sizeof(BlockQ4_0);
  }
  return 0;
}

std::size_t quant_row_bytes(QuantType q, int64_t k) noexcept {
  return static_cast<std::size_t>(k / kQuantBlock) * quant_block_bytes(q);
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t k) {
  check_k(k);
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    float amax = 0.0f;
    for (int j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    const bool tiny = std::isinf(id);  // see quotient()
    for (int j = 0; j < kQuantBlock; ++j) y[b].qs[j] = static_cast<int8_t>(std::roundf(quotient(xb[j], d, id, tiny)));
  }
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t k) {
  check_k(k);
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    float amax = 0.0f, max = 0.0f;  // largest magnitude, and that value with its sign
    for (int j = 0; j < kQuantBlock; ++j)
      if (std::fabs(xb[j]) > amax) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    const bool tiny = std::isinf(id);  // see quotient()
    for (int j = 0; j < kQuantBlock / 2; ++j) {
      const auto q0 =
          std::min<uint8_t>(15, static_cast<uint8_t>(static_cast<int8_t>(quotient(xb[j], d, id, tiny) + 8.5f)));
      const auto q1 = std::min<uint8_t>(
          15, static_cast<uint8_t>(static_cast<int8_t>(quotient(xb[j + kQuantBlock / 2], d, id, tiny) + 8.5f)));
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t k) noexcept {
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kQuantBlock; ++j) y[b * kQuantBlock + j] = static_cast<float>(x[b].qs[j]) * d;
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t k) noexcept {
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kQuantBlock / 2; ++j) {
      y[b * kQuantBlock + j] = static_cast<float>((x[b].qs[j] & 0x0f) - 8) * d;
      y[b * kQuantBlock + j + kQuantBlock / 2] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
    }
  }
}

namespace {
std::string block_name(int64_t b) {
  return "block " + std::to_string(b) + " (elements " + std::to_string(b * kQuantBlock) + ".." +
         std::to_string(b * kQuantBlock + kQuantBlock - 1) + ")";
}

// A NaN cast to an integer is undefined and q8_0's max ignores it: checked before quantizing.
void check_finite_blocks(const float* x, int64_t k) {
  for (int64_t i = 0; i < k; ++i)
    if (!std::isfinite(x[i])) throw WeightsError(block_name(i / kQuantBlock) + " has a value that is not finite");
}

void check_block_scales(QuantType q, const void* blocks, int64_t k) {
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const uint16_t d = q == QuantType::Q8_0 ? static_cast<const BlockQ8_0*>(blocks)[b].d
                                            : static_cast<const BlockQ4_0*>(blocks)[b].d;
    if ((d & 0x7c00u) != 0x7c00u) continue;  // fp16 exponent all ones: Inf
    // The scale is max|w| / 127 (q8_0) or / 8 (q4_0), stored as fp16 (largest 65504).
    const long limit = 65504L * (q == QuantType::Q8_0 ? 127 : 8);
    throw WeightsError(block_name(b) + " has a value beyond |w| = " + std::to_string(limit) + ", which no fp16 " +
                       std::string(quant_name(q)) + " scale represents; use a float dtype");
  }
}
}  // namespace

void quantize_row(QuantType q, const float* x, void* blocks, int64_t k) {
  check_k(k);
  check_finite_blocks(x, k);
  if (q == QuantType::Q8_0) quantize_row_q8_0(x, static_cast<BlockQ8_0*>(blocks), k);
  else quantize_row_q4_0(x, static_cast<BlockQ4_0*>(blocks), k);
  check_block_scales(q, blocks, k);
}

void quantize_round_trip(QuantType q, const float* x, float* y, int64_t k) {
  if (q == QuantType::None) {
    std::copy(x, x + k, y);
    return;
  }
  if (q == QuantType::Q8_0) {  // quantize_row checks k
    std::vector<BlockQ8_0> blocks(static_cast<std::size_t>(k / kQuantBlock));
    quantize_row(q, x, blocks.data(), k);
    dequantize_row_q8_0(blocks.data(), y, k);
  } else {
    std::vector<BlockQ4_0> blocks(static_cast<std::size_t>(k / kQuantBlock));
    quantize_row(q, x, blocks.data(), k);
    dequantize_row_q4_0(blocks.data(), y, k);
  }
}

}  // namespace llmport
