#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "llmport/dtype.hpp"
#include "llmport/error.hpp"

using namespace llmport;

TEST(DType, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even -> 1.0.
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.00390625f)), 1.0f);
  // 1 + 3*2^-8 is halfway between 1.0078125 (odd mantissa) and 1.015625 -> 1.015625.
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.01171875f)), 1.015625f);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DType, F16KnownValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(70000.0f), 0x7c00);                 // overflow -> inf
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(f32_to_f16(0.1f)), 0.0999755859375f);
}

TEST(DType, ParseNamesAndRejectsUnknown) {
  EXPECT_EQ(parse_dtype("bfloat16"), DType::BF16);
  EXPECT_EQ(parse_dtype("fp16"), DType::F16);
  EXPECT_EQ(parse_dtype("F32"), DType::F32);
  EXPECT_THROW(parse_dtype("int8"), UsageError);
}
