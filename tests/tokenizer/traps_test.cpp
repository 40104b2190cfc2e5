// TRAPS.md #12-#14 of the shared data, with the ids the trap list gives.
#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

const Tokenizer& shared_tok(const std::string& name) { return cached_tokenizer(shared_path("tokenizers/" + name)); }

// #12 Llama-3 splits digits in groups of three (\p{N}{1,3}); Qwen3 one by one.
TEST(TokenizerTraps, Llama3DigitGroupsQwen3SingleDigits) {
  EXPECT_EQ(shared_tok("llama3").encode("What is 3333+777?", {false, false}),
            (std::vector<int>{3923, 374, 220, 8765, 18, 10, 15831, 30}));
  EXPECT_EQ(shared_tok("llama3").encode("1234567", {false, false}), (std::vector<int>{4513, 10961, 22}));
  EXPECT_EQ(shared_tok("qwen3").encode("What is 3333+777?", {false, false}),
            (std::vector<int>{3838, 374, 220, 18, 18, 18, 18, 10, 22, 22, 22, 30}));
}

// #13 Byte fallback: characters outside the SentencePiece vocab become <0xNN> tokens.
TEST(TokenizerTraps, MistralByteFallbackNeverUnk) {
  const Tokenizer& tok = shared_tok("mistral_v0_1");
  struct Case {
    std::string text;
    std::vector<int> ids;
  };
  for (const Case& c : {Case{"\n\t\n", {28705, 13, 12, 13}}, Case{"\xF0\x9F\xA6\x99", {28705, 243, 162, 169, 156}},
                        Case{"\xE0\xBC\x83", {28705, 227, 191, 134}}}) {
    auto ids = tok.encode(c.text, {false, false});
    EXPECT_EQ(ids, c.ids);
    EXPECT_EQ(tok.decode(ids), c.text);
    for (int id : ids) EXPECT_NE(tok.id_to_token(id), "<unk>");
  }
}

// #14 BOS comes from the post-processor only.
TEST(TokenizerTraps, BosFromPostProcessorOnly) {
  EXPECT_EQ(shared_tok("llama3").encode("Hello"), (std::vector<int>{128000, 9906}));
  EXPECT_EQ(shared_tok("llama3_nobos").encode("Hello"), (std::vector<int>{9906}));
  EXPECT_EQ(shared_tok("mistral_v0_1").encode("Hello"), (std::vector<int>{1, 22557}));
  // A template that writes the BOS itself, encoded without special tokens: one BOS only.
  auto ids = shared_tok("llama3").encode("<|begin_of_text|>Hello", {false, false});
  EXPECT_EQ(ids, (std::vector<int>{128000, 9906}));
}

}  // namespace
}  // namespace llmport::test
