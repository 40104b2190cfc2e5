#pragma once
// Weight-only block quantization in ggml's Q8_0 and Q4_0 formats (ggml-quants.c
// quantize_row_q8_0_ref / quantize_row_q4_0_ref and their dequantize_row_* inverses), so
// figures compare with llama.cpp's. A row of k values (k a multiple of 32, along a linear's
// input dimension) becomes k/32 blocks; each block has one fp16 scale d.
//   q8_0: d = max|x| / 127; id = d ? 1/d : 0 (fp32, before d is stored as fp16);
//         q = roundf(x * id) (ties away from zero) as int8; value q * fp16(d). 34 bytes.
//   q4_0: d = m / -8 with m the block's signed value of largest magnitude; id as above;
//         q = min(15, (int8)(x * id + 8.5f)); value (q - 8) * fp16(d). Element j in the low
//         nibble of byte j, element j + 16 in its high nibble. 18 bytes.
// Where 1/d overflows (fp32 denormal blocks) x * id is inf/NaN and ggml's conversion to an
// integer is undefined; llmport uses the quotient x / d instead (the fp16 scale is then 0).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace llmport {

/// Block quantization of a linear's weights (None: the weight stays in its float dtype).
enum class QuantType { None, Q8_0, Q4_0 };

/// Values per block along the input dimension (both formats).
inline constexpr int kQuantBlock = 32;

/// One q8_0 block: fp16 scale bits + 32 int8 quants (34 bytes, as ggml's block_q8_0).
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQuantBlock];
};
/// One q4_0 block: fp16 scale bits + 16 bytes of nibbles (18 bytes, as ggml's block_q4_0).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18, "ggml block layouts");

/// "none", "q8_0", "q4_0".
std::string_view quant_name(QuantType q) noexcept;
/// Parses "q8_0" / "q4_0" (also "Q8_0", "Q4_0"); anything else is QuantType::None (the
/// caller then parses a float dtype).
QuantType parse_quant(std::string_view s) noexcept;
/// Bytes of one block (34 or 18; 0 for None).
std::size_t quant_block_bytes(QuantType q) noexcept;
/// Bytes of a row of k values (k a multiple of kQuantBlock).
std::size_t quant_row_bytes(QuantType q, int64_t k) noexcept;

/// Quantizes x[k] (k a multiple of 32; UsageError otherwise) into k/32 blocks.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t k);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t k);
/// Widens k/32 blocks back to fp32 values y[k] (exact: q * d is an fp32 product of an
/// integer below 2^8 and an fp16 value).
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t k) noexcept;
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t k) noexcept;
/// Quantizes x[k] into k/32 blocks of format `q` (Q8_0 or Q4_0: BlockQ8_0 / BlockQ4_0),
/// refusing what no block represents. Throws UsageError when k is not a multiple of 32,
/// WeightsError naming the first block that holds a value that is not finite (checked
/// first: converting a NaN to an integer is undefined, and q8_0's max would ignore it) or
/// whose fp16 scale overflows, a value beyond 65504 * 127 (q8_0) or 65504 * 8 (q4_0): every
/// output it touched would be NaN.
void quantize_row(QuantType q, const float* x, void* blocks, int64_t k);
/// x[k] through `q` and back (what a kernel with weights in format `q` multiplies): the
/// values a quantized weight stands for. `q` None copies. Throws UsageError when k is not a
/// multiple of 32, WeightsError as quantize_row.
void quantize_round_trip(QuantType q, const float* x, float* y, int64_t k);

}  // namespace llmport
