// IncrementalDecoder: streaming the ids of every golden case one by one yields exactly
// decode(ids), and every chunk (hence every emitted prefix) is valid UTF-8.
#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

class StreamingDecode : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamingDecode, ConcatenationEqualsDecodeAndChunksAreValidUtf8) {
  ASSERT_NE(GetParam(), "<missing>");
  auto dir = shared_path("tokenizers/" + GetParam());
  auto g = read_json(dir / "golden.json");
  const Tokenizer& tok = cached_tokenizer(dir);
  int multibyte_cases = 0, held_back = 0;
  for (const auto& c : g["cases"]) {
    SCOPED_TRACE("case " + c["id"].get<std::string>());
    auto ids = c["ids"].get<std::vector<int>>();
    for (bool skip : {false, true}) {
      IncrementalDecoder dec(tok, skip);
      std::string streamed;
      for (int id : ids) {
        std::string chunk = dec.push(id);
        if (chunk.empty()) ++held_back;
        EXPECT_TRUE(valid_utf8(chunk)) << "chunk after id " << id;
        streamed += chunk;
        ASSERT_TRUE(valid_utf8(streamed));
      }
      streamed += dec.flush();
      EXPECT_EQ(streamed, tok.decode(ids, skip));
    }
    std::string text = c["text"];
    for (char ch : text) multibyte_cases += static_cast<unsigned char>(ch) >= 0x80;
  }
  EXPECT_GT(multibyte_cases, 0) << "golden set has no multi-byte text to stream";
}

INSTANTIATE_TEST_SUITE_P(Shared, StreamingDecode, ::testing::ValuesIn(golden_tokenizer_names()),
                         tokenizer_test_name);

// A character split over byte-fallback tokens is held back until complete.
TEST(StreamingDecode, HoldsBackHalfCharacter) {
  const Tokenizer& tok = cached_tokenizer(shared_path("tokenizers/mistral_v0_1"));
  auto ids = tok.encode("\xF0\x9F\xA6\x99!", {false, false});  // "▁", 4 byte tokens, "!"
  ASSERT_EQ(ids.size(), 6u);
  IncrementalDecoder dec(tok);
  EXPECT_EQ(dec.push(ids[0]), "");  // the leading space is stripped by the decoder
  EXPECT_EQ(dec.push(ids[1]), "");
  EXPECT_EQ(dec.push(ids[2]), "");
  EXPECT_EQ(dec.push(ids[3]), "");
  EXPECT_EQ(dec.push(ids[4]), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(dec.push(ids[5]), "!");
  EXPECT_EQ(dec.flush(), "");
}

// An incomplete tail at the end of the stream is flushed as the decoder renders it.
TEST(StreamingDecode, FlushReturnsIncompleteTail) {
  const Tokenizer& tok = cached_tokenizer(shared_path("tokenizers/qwen3"));
  auto ids = tok.encode("a\xF0\x9F\xA6\x99", {false, false});
  IncrementalDecoder dec(tok);
  std::string out;
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) out += dec.push(ids[i]);
  std::vector<int> head(ids.begin(), ids.end() - 1);
  out += dec.flush();
  EXPECT_EQ(out, tok.decode(head));
}

}  // namespace
}  // namespace llmport::test
