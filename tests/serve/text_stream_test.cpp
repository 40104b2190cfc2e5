// The text side of streaming: UTF-8 holdback and stop-string holdback.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace llmport::serve
