// DecodeChunks: the guided cut of a decode GEMV region covers every panel of every weight
// exactly once, in order, never across two weights, with sizes from the formula in
// decode_chunks.hpp: a share of what is left, one unit at the end.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/decode_chunks.hpp"
#include "llmport/error.hpp"

namespace llmport::cpu {
namespace {

// Panels covered per weight, in claim order; fails on a gap, an overlap or a crossing.
void expect_exact_cover(const DecodeChunks& ch, const std::vector<int>& panels) {
  std::vector<int> next(panels.size(), 0);
  std::size_t part = 0;
  for (int c = 0; c < ch.size(); ++c) {
    const PanelChunk& k = ch[c];
    ASSERT_GE(k.part, static_cast<int>(part)) << "chunk " << c << " goes back to an earlier weight";
    part = static_cast<std::size_t>(k.part);
    ASSERT_LT(part, panels.size());
    ASSERT_EQ(k.p0, next[part]) << "chunk " << c << " of weight " << part;
    ASSERT_GT(k.p1, k.p0) << "empty chunk " << c;
    ASSERT_LE(k.p1, panels[part]);
    next[part] = k.p1;
  }
  for (std::size_t i = 0; i < panels.size(); ++i) EXPECT_EQ(next[i], panels[i]) << "weight " << i;
}

TEST(DecodeChunks, QwenQkvGroupGuidedSizes) {
  // qwen3-0.6b q/k/v: 128 + 64 + 64 panels of 16 rows, 4 panel streams: 64 units. Two
  // threads: each chunk is ceil(remaining / 8) units, cut at the end of its weight: q 8, 7, 7, 6, then
  // the 4 units q has left; k 4, 4, 3, 3, then 2 left; v 2, 2, 2, 2, then 1 unit each.
  const std::vector<int> panels = {128, 64, 64}, group = {4, 4, 4};
  const DecodeChunks ch(panels, group, 2);
  expect_exact_cover(ch, panels);
  const std::vector<int> want = {32, 28, 28, 24, 16, 16, 16, 12, 12, 8, 8,
                                 8,  8,  8,  4,  4,  4,  4,  4,  4,  4, 4};
  ASSERT_EQ(ch.size(), static_cast<int>(want.size()));
  for (int c = 0; c < ch.size(); ++c) EXPECT_EQ(ch[c].p1 - ch[c].p0, want[c]) << "chunk " << c;
  EXPECT_EQ(ch[4].part, 0);  // q: 32 + 28 + 28 + 24 + 16 = 128 panels
  EXPECT_EQ(ch[5].part, 1);
  EXPECT_EQ(ch[10].part, 2);
}

TEST(DecodeChunks, LargeWeightShrinksOnlyAtTheEnd) {
  // lm_head of qwen3: 151936 rows = 9496 panels, 2374 units; the first chunk is
  // ceil(2374 / 8) = 297 units.
  const std::vector<int> panels = {9496}, group = {4};
  const DecodeChunks ch(panels, group, 2);
  expect_exact_cover(ch, panels);
  EXPECT_EQ(ch[0].p1 - ch[0].p0, 297 * 4);
  EXPECT_EQ(ch[1].p1 - ch[1].p0, 260 * 4);  // ceil(2077 / 8)
  int prev = ch[0].p1 - ch[0].p0;
  for (int c = 1; c < ch.size(); ++c) {  // never grows
    const int n = ch[c].p1 - ch[c].p0;
    EXPECT_LE(n, prev) << "chunk " << c;
    prev = n;
  }
  EXPECT_EQ(ch[ch.size() - 1].p1 - ch[ch.size() - 1].p0, 4);
  EXPECT_LT(ch.size(), DecodeChunks::kMaxChunks);
}

// One thread, 64 units of one panel: a quarter of what is left each time, 16, 12, 9, 7, ...
TEST(DecodeChunks, OneThreadTakesAQuarterOfWhatIsLeft) {
  const std::vector<int> panels = {64}, group = {1};
  const DecodeChunks ch(panels, group, 1);
  expect_exact_cover(ch, panels);
  ASSERT_GE(ch.size(), 4);
  EXPECT_EQ(ch[0].p1 - ch[0].p0, 16);
  EXPECT_EQ(ch[1].p1 - ch[1].p0, 12);
  EXPECT_EQ(ch[2].p1 - ch[2].p0, 9);
  EXPECT_EQ(ch[3].p1 - ch[3].p0, 7);
}

TEST(DecodeChunks, PartialUnitsOddGroupsOneThreadAndCapacity) {
  // A last unit short of `group` panels, groups of 1-2 panels, and a single thread.
  for (int threads : {1, 2, 3, 8}) {
    const std::vector<int> panels = {7, 1, 33}, group = {4, 1, 2};
    const DecodeChunks ch(panels, group, threads);
    expect_exact_cover(ch, panels);
  }
  // More weights' units than chunk slots: the last slots take the rest, still exact.
  const std::vector<int> many(8, 100000), ones(8, 1);
  const DecodeChunks ch(many, ones, 8);
  expect_exact_cover(ch, many);
  EXPECT_EQ(ch.size(), DecodeChunks::kMaxChunks);  // the guided cut alone would need more
  const std::vector<int> empty_weight = {0, 16}, g = {4, 4};
  expect_exact_cover(DecodeChunks(empty_weight, g, 2), empty_weight);
  EXPECT_THROW(DecodeChunks(std::vector<int>{4, 4}, std::vector<int>{4}, 2), UsageError);
}

}  // namespace
}  // namespace llmport::cpu
