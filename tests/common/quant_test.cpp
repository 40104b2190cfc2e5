// Q8_0 / Q4_0 block formats bit for bit against blocks computed by hand from ggml's
// reference definitions (llmport/quant.hpp): zero block, all-equal block, a block whose
// largest magnitude is negative, ties at .5, the q4_0 clamp at 15 and nibble order.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "llmport/error.hpp"
#include "llmport/quant.hpp"

namespace llmport {
namespace {

using Row = std::array<float, kQuantBlock>;

BlockQ8_0 q8(const Row& x) {
  BlockQ8_0 b{};
  quantize_row_q8_0(x.data(), &b, kQuantBlock);
  return b;
}
BlockQ4_0 q4(const Row& x) {
  BlockQ4_0 b{};
  quantize_row_q4_0(x.data(), &b, kQuantBlock);
  return b;
}
// Nibble of element j (low nibble of byte j, or high nibble of byte j - 16).
int nib(const BlockQ4_0& b, int j) { return j < 16 ? b.qs[j] & 0xf : b.qs[j - 16] >> 4; }

TEST(QuantQ8_0, ZeroBlockHasZeroScaleAndZeroQuants) {
  const BlockQ8_0 b = q8(Row{});
  EXPECT_EQ(b.d, 0x0000);  // 0 / 127
  for (int j = 0; j < kQuantBlock; ++j) EXPECT_EQ(b.qs[j], 0);
}

TEST(QuantQ8_0, AllEqualBlock) {
  Row x;
  x.fill(1.0f);
  const BlockQ8_0 b = q8(x);
  // d = 1/127 = 0.0078740..; fp16: 2^-7 * (1 + 8/1024) = 0x2008; id = 127 -> q = 127.
  EXPECT_EQ(b.d, 0x2008);
  for (int j = 0; j < kQuantBlock; ++j) EXPECT_EQ(b.qs[j], 127);
  std::array<float, kQuantBlock> y{};
  dequantize_row_q8_0(&b, y.data(), kQuantBlock);
  EXPECT_EQ(y[0], 127.0f * 0.00787353515625f);  // q * fp16(d), exact in fp32
}

TEST(QuantQ8_0, NegativeLargestMagnitudeAndTiesAwayFromZero) {
  // amax 127 -> d = 1 exactly (fp16 0x3C00), id = 1: q = roundf(x), ties away from zero.
  Row x{};
  x[0] = -127.0f;
  x[1] = 0.5f;
  x[2] = -0.5f;
  x[3] = 1.5f;
  x[4] = 2.5f;
  x[5] = -2.5f;
  x[6] = 0.49f;
  const BlockQ8_0 b = q8(x);
  EXPECT_EQ(b.d, 0x3C00);
  const int want[] = {-127, 1, -1, 2, 3, -3, 0};
  for (int j = 0; j < 7; ++j) EXPECT_EQ(b.qs[j], want[j]) << j;
}

TEST(QuantQ4_0, ZeroBlockIsAllEights) {
  const BlockQ4_0 b = q4(Row{});
  EXPECT_EQ(b.d, 0x8000);  // d = 0 / -8 = -0.0 in ggml's arithmetic
  for (int j = 0; j < kQuantBlock / 2; ++j) EXPECT_EQ(b.qs[j], 0x88) << j;
  std::array<float, kQuantBlock> y{};
  dequantize_row_q4_0(&b, y.data(), kQuantBlock);
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(QuantQ4_0, AllEqualBlock) {
  Row x;
  x.fill(1.0f);
  const BlockQ4_0 b = q4(x);
  // max = 1 -> d = -0.125 (fp16 0xB000), id = -8: q = (int8)(-8 + 8.5) = 0 everywhere.
  EXPECT_EQ(b.d, 0xB000);
  for (int j = 0; j < kQuantBlock / 2; ++j) EXPECT_EQ(b.qs[j], 0x00) << j;
  std::array<float, kQuantBlock> y{};
  dequantize_row_q4_0(&b, y.data(), kQuantBlock);
  for (float v : y) EXPECT_EQ(v, 1.0f);  // (0 - 8) * -0.125
}

TEST(QuantQ4_0, NegativeLargestMagnitudeTruncationClampAndNibbleOrder) {
  // max = -8 -> d = 1 (0x3C00), id = 1: q = min(15, (int8)(x + 8.5)), truncating.
  Row x{};
  x[0] = -8.0f;   // 0.5 -> 0
  x[1] = 0.5f;    // 9.0 -> 9
  x[2] = -0.5f;   // 8.0 -> 8
  x[3] = 1.5f;    // 10.0 -> 10
  x[4] = -1.5f;   // 7.0 -> 7
  x[5] = 0.49f;   // 8.99 -> 8
  x[16] = 7.0f;   // 15.5 -> 15 (high nibble of byte 0)
  x[17] = 7.9f;   // 16.4 -> 16 -> clamped to 15
  x[18] = -7.9f;  // 0.6 -> 0
  const BlockQ4_0 b = q4(x);
  EXPECT_EQ(b.d, 0x3C00);
  const std::pair<int, int> want[] = {{0, 0}, {1, 9}, {2, 8}, {3, 10}, {4, 7}, {5, 8},
                                      {16, 15}, {17, 15}, {18, 0}, {6, 8}, {31, 8}};
  for (const auto& [j, q] : want) EXPECT_EQ(nib(b, j), q) << j;
  EXPECT_EQ(b.qs[0], 0xF0);  // element 0 low nibble (0), element 16 high nibble (15)
  std::array<float, kQuantBlock> y{};
  dequantize_row_q4_0(&b, y.data(), kQuantBlock);
  EXPECT_EQ(y[0], -8.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[16], 7.0f);
}

// fp32 denormals: d = amax / 127 (or m / -8) is nonzero but 1/d overflows to inf, so ggml's
// x * id would be inf/NaN, whose conversion to int8 is undefined (x86 gave 0). The quants are
// the quotients x / d (roundf, or truncation of + 8.5 for q4_0), the fp16 scale is 0, and the
// block dequantizes to zeros.
TEST(QuantFormats, ADenormalBlockHasZeroScaleAndTheQuotientQuants) {
  Row x;
  x.fill(1e-40f);
  x[0] = -3e-40f;
  x[5] = 0.0f;
  const float d8 = 3e-40f / 127.0f, d4 = -3e-40f / -8.0f;
  ASSERT_TRUE(std::isinf(1.0f / d8) && std::isinf(1.0f / d4));  // the case under test
  const BlockQ8_0 b8 = q8(x);
  EXPECT_EQ(b8.d, 0x0000);
  EXPECT_EQ(b8.qs[0], -127);
  EXPECT_EQ(b8.qs[1], static_cast<int8_t>(std::roundf(1e-40f / d8)));
  EXPECT_EQ(b8.qs[1], 42);  // 1e-40 / 2.36e-42
  EXPECT_EQ(b8.qs[5], 0);
  const BlockQ4_0 b4 = q4(x);
  EXPECT_EQ(b4.d, 0x0000);
  EXPECT_EQ(nib(b4, 0), 0);   // -8 + 8.5 -> 0
  EXPECT_EQ(nib(b4, 1), 11);  // 1e-40 / 3.75e-41 = 2.67, + 8.5 = 11.17 -> 11
  EXPECT_EQ(nib(b4, 5), 8);   // 0 + 8.5 -> 8
  std::array<float, kQuantBlock> y{};
  dequantize_row_q8_0(&b8, y.data(), kQuantBlock);
  for (float v : y) EXPECT_EQ(v, 0.0f);
  dequantize_row_q4_0(&b4, y.data(), kQuantBlock);
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(QuantFormats, RowsBlocksAndNames) {
  EXPECT_EQ(quant_row_bytes(QuantType::Q8_0, 64), 68u);
  EXPECT_EQ(quant_row_bytes(QuantType::Q4_0, 64), 36u);
  EXPECT_EQ(parse_quant("q4_0"), QuantType::Q4_0);
  EXPECT_EQ(parse_quant("Q8_0"), QuantType::Q8_0);
  EXPECT_EQ(parse_quant("bf16"), QuantType::None);
  EXPECT_EQ(quant_name(QuantType::Q8_0), "q8_0");
  std::vector<float> x(33, 1.0f), y(33);
  EXPECT_THROW(quantize_round_trip(QuantType::Q8_0, x.data(), y.data(), 33), UsageError);
  // Blocks are independent: a round trip of two blocks equals two one-block round trips.
  std::vector<float> two(64), out(64), one(32);
  for (int i = 0; i < 64; ++i) two[static_cast<std::size_t>(i)] = static_cast<float>((i * 37) % 19) - 9.0f + (i >= 32) * 20.0f;
  quantize_round_trip(QuantType::Q4_0, two.data(), out.data(), 64);
  quantize_round_trip(QuantType::Q4_0, two.data() + 32, one.data(), 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[static_cast<std::size_t>(32 + i)], one[static_cast<std::size_t>(i)]);
}

}  // namespace
}  // namespace llmport
