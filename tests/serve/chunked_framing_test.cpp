// ChunkedFraming, the check of a chunked request body on its way to httplib's chunked
// reader (RFC 9112 7.1): what it hands on, what it drops (trailer fields), what is Bad.
#include <gtest/gtest.h>

#include <string>

#include "serve/chunked_framing.hpp"

namespace llmport::serve {
namespace {

struct Framed {
  std::string passed;     // the bytes handed on
  std::size_t used = 0;   // input bytes consumed before the end, or before the Bad byte
  bool bad = false;
  bool done = false;
};

// `in` through one ChunkedFraming, chunk data in bulk as the connection stream does.
Framed frame(const std::string& in) {
  ChunkedFraming f;
  Framed r;
  while (r.used < in.size() && !f.done()) {
    if (const std::size_t d = f.data_left()) {
      const std::size_t k = std::min(d, in.size() - r.used);
      r.passed += in.substr(r.used, k);
      f.took_data(k);
      r.used += k;
      continue;
    }
    const auto b = f.next(in[r.used]);
    if (b == ChunkedFraming::Byte::Bad) {
      r.bad = true;
      break;
    }
    if (b == ChunkedFraming::Byte::Pass) r.passed += in[r.used];
    ++r.used;
  }
  r.done = f.done();
  return r;
}

TEST(ChunkedFraming, ChunksAndExtensionsPassAsTheyAreAndTheEndIsFound) {
  const std::string body = "5\r\nhello\r\nA;name=\"v\"\r\n0123456789\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
  const Framed r = frame(body);
  EXPECT_TRUE(r.done);
  EXPECT_FALSE(r.bad);
  EXPECT_EQ(r.passed, "5\r\nhello\r\nA;name=\"v\"\r\n0123456789\r\n0\r\n\r\n");
  EXPECT_EQ(r.used, r.passed.size());  // the next request's bytes are not touched
}

TEST(ChunkedFraming, TrailerFieldsAreDroppedAndTheBlankLineHandedOn) {
  const Framed r = frame("3\r\nabc\r\n0\r\nX-Trailer: 1\r\nX-Empty:\r\n\r\n");
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.passed, "3\r\nabc\r\n0\r\n\r\n");
}

// What httplib 0.11's strtoul-and-getline reader accepts and the coding does not: each is
// Bad at the byte named by `used`.
TEST(ChunkedFraming, WhatIsNotTheChunkedCodingIsBadAtItsFirstByte) {
  const struct {
    std::string in;
    std::size_t used;
  } cases[] = {
      {"5\r\nhelloXX\r\n", 8},                   // no CRLF after the data
      {"0x5\r\nhello\r\n", 1},                   // a C hex prefix
      {" 5\r\nhello\r\n", 0},                    // leading whitespace
      {"+5\r\nhello\r\n", 0},                    // a sign
      {"\r\n", 0},                               // no size at all
      {"5\nhello\r\n", 1},                       // a bare LF after the size
      {"1000000000000000\r\n", 15},              // 16 hex digits: over 60 bits
      {"0\r\nX: 1\n\r\n", 7},                    // a trailer line ending in a bare LF
      {std::string("0\r\nX: \0\r\n\r\n", 10), 6},  // a NUL in a trailer
      {"0\r\nX: a\rb\r\n\r\n", 8},              // a bare CR in a trailer
      {"0\r\n\rX", 4},                           // the final CRLF broken
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.in);
    const Framed r = frame(c.in);
    EXPECT_TRUE(r.bad);
    EXPECT_EQ(r.used, c.used);
  }
}

TEST(ChunkedFraming, TrailersOverTheLimitAreBad) {
  const std::string line = "X: " + std::string(1000, 'a') + "\r\n";
  std::string in = "0\r\n";
  for (std::size_t n = 0; n * line.size() <= ChunkedFraming::kMaxTrailerBytes; ++n) in += line;
  const Framed r = frame(in + "\r\n");
  EXPECT_TRUE(r.bad);
  EXPECT_EQ(r.used, 3 + ChunkedFraming::kMaxTrailerBytes);
}

}  // namespace
}  // namespace llmport::serve
