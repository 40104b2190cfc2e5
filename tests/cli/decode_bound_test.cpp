// bench's segmented tg bound (src/cli/decode_bound.cpp): the formula and the segmenting.
#include <gtest/gtest.h>

#include "cli/decode_bound.hpp"

namespace llmport::cli {
namespace {

TEST(DecodeBound, IsTheTokensOverTheTimeEverySegmentTakesAtItsOwnBound) {
  // 16 tokens at a 10 tokens/s bound take 1.6 s, 16 at 20 take 0.8 s: 32 / 2.4 s.
  EXPECT_DOUBLE_EQ(segmented_bound_tps({{16, 2.0, 10.0}, {16, 1.0, 20.0}}), 32.0 / 2.4);
  // Not the mean of the bounds (15): a slow segment weighs by the time it bounds.
  EXPECT_LT(segmented_bound_tps({{16, 2.0, 10.0}, {16, 1.0, 20.0}}), 15.0);
  EXPECT_DOUBLE_EQ(segmented_bound_tps({{128, 4.0, 30.0}}), 30.0);
}

TEST(DecodeBound, ASegmentWithoutABoundLeavesTheRepetitionWithoutOne) {
  EXPECT_EQ(segmented_bound_tps({{16, 1.0, 20.0}, {16, 1.0, 0.0}}), 0.0);
  EXPECT_EQ(segmented_bound_tps({}), 0.0);
}

TEST(DecodeBound, SegmentsSplitTheRepetitionEvenly) {
  EXPECT_EQ(segment_starts(128), (std::vector<int>{0, 32, 64, 96, 128}));
  EXPECT_EQ(segment_starts(32), (std::vector<int>{0, 32}));
  EXPECT_EQ(segment_starts(1), (std::vector<int>{0, 1}));
  EXPECT_EQ(segment_starts(33), (std::vector<int>{0, 16, 33}));
  EXPECT_EQ(segment_starts(100), (std::vector<int>{0, 25, 50, 75, 100}));
}

}  // namespace
}  // namespace llmport::cli
