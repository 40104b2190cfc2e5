// The text side of streaming: UTF-8 holdback and stop-string holdback.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "serve/text_stream.hpp"

namespace llmport::serve {
namespace {

TEST(Utf8Holdback, HoldsTheBytesOfAnIncompleteCharacterUntilItCompletes) {
  Utf8Holdback h;
  const std::string e_acute = "\xC3\xA9";           // é
  const std::string euro = "\xE2\x82\xAC";          // €
  const std::string emoji = "\xF0\x9F\x98\x80";     // 😀
  EXPECT_EQ(h.push("a" + e_acute.substr(0, 1)), "a");
  EXPECT_EQ(h.push(e_acute.substr(1)), e_acute);
  EXPECT_EQ(h.push(euro.substr(0, 2)), "");
  EXPECT_EQ(h.push(euro.substr(2) + emoji.substr(0, 1)), euro);
  EXPECT_EQ(h.push(emoji.substr(1, 2)), "");
  EXPECT_EQ(h.push(emoji.substr(3) + "z"), emoji + "z");
  EXPECT_EQ(h.flush(), "");
  EXPECT_EQ(utf8_complete_prefix("ab\xE2\x82"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab"), 2u);
  EXPECT_EQ(utf8_complete_prefix("\x80\x80"), 2u);  // stray continuation bytes pass through
}

TEST(StopMatcher, HoldsAPartialMatchUntilItResolves) {
  StopMatcher m({"END", "\n\n"});
  EXPECT_EQ(m.push("hello E"), "hello ");
  EXPECT_EQ(m.push("N"), "");
  EXPECT_EQ(m.push("x"), "ENx");  // not a stop after all: released
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.push(" and\n"), " and");
  EXPECT_EQ(m.push("\nmore"), "");  // "\n\n" matched: the stop text is not returned
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("later"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, FlushReleasesTheHeldTailWhenNoStopCame) {
  StopMatcher m({"world!"});
  EXPECT_EQ(m.push("hello wor"), "hello ");
  EXPECT_EQ(m.flush(), "wor");
  StopMatcher none({});
  EXPECT_EQ(none.push("abc"), "abc");
  StopMatcher inside({"lo w"});
  EXPECT_EQ(inside.push("hello world"), "hel");
  EXPECT_TRUE(inside.stopped());
}

// Token entries wait for their text: the entries out join to the text out. Driven here by
// the real StopMatcher over the tokens "Hi", ",", " there", " was" with stop "re was".
TEST(TokenHoldback, EntriesJoinToTheTextReleasedAndAStopCutsTheTokenItStartsIn) {
  StopMatcher m({"re was"});
  TokenHoldback<int> h;
  std::string text, joined;
  std::vector<int> out;
  auto push = [&](int id, const std::string& piece) {
    h.push(id, piece);
    text += m.push(piece);
    for (auto& [i, t] : h.release(text.size(), m.stopped())) out.push_back(i), joined += t;
  };
  push(0, "Hi");
  EXPECT_EQ(out, std::vector<int>({0}));
  push(1, ",");
  push(2, " there");  // " the" out, "re" held: a prefix of the stop string
  EXPECT_EQ(text, "Hi, the");
  EXPECT_EQ(out, std::vector<int>({0, 1}));  // " there" waits for its "re"
  push(3, " was");
  ASSERT_TRUE(m.stopped());
  EXPECT_EQ(text, "Hi, the");
  EXPECT_EQ(out, std::vector<int>({0, 1, 2}));  // " was" lies past the cut: dropped
  EXPECT_EQ(joined, text);
  EXPECT_TRUE(h.release(100, false).empty());
  // A stop at a token's first byte drops that token; one adding nothing at the cut too.
  TokenHoldback<int> g;
  g.push(0, "ab");
  g.push(1, "");
  g.push(2, "cd");
  const auto r = g.release(2, true);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].second, "ab");
  // No stop: an entry adding nothing goes with the text before it, the rest at the end.
  TokenHoldback<int> n;
  n.push(0, "");
  n.push(1, "");
  EXPECT_EQ(n.release(0, false).size(), 2u);
  n.push(2, "xyz");
  EXPECT_TRUE(n.release(2, false).empty());
  ASSERT_EQ(n.release(SIZE_MAX, false).size(), 1u);
}

}  // namespace
}  // namespace llmport::serve
