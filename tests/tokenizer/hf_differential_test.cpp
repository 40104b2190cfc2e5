// Differential test against the reference itself: strings no golden holds, built at random
// (fixed seed) from pieces that stress tokenizers (contractions, digit runs, whitespace
// kinds, NFC/NFD, scripts without spaces, ZWJ emoji, special-token text, byte-fallback
// bytes), encoded and decoded by Hugging Face's Rust tokenizers (the Node binding the
// shared goldens came from, tests/tokenizer/node) and by llmport, for every shared
// tokenizer. The goldens fix ~43 strings each; this keeps the same reference for the
// strings a user writes.
#include <cstdlib>
#include <fstream>
#include <random>

#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string>& pieces() {
  static const std::vector<std::string> p = {
      "Hello", "world", " the", "THE", "it's", "IT'S", " we'll", "don't", "I'M", "na\u00efve", "caf\u00e9",
      "cafe\u0301", "12345678", "3.14159", "1,000,000", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ",
      "\u00a0", "\u3000", "\u200b", "\u200d", "\ufeff", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
      "\u4e2d\u6587", "\ud55c\uad6d\uc5b4", "\u1100\u1161", "\u0645\u0631\u062d\u0628\u0627", "\u05e9\u05dc\u05d5\u05dd",
      "\u0939\u093f\u0928\u094d\u0926\u0940", "\u0e20\u0e32\u0e29\u0e32", "\U0001F600",
      "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\U0001F44D\U0001F3FD", "\U0001F1EB\U0001F1F7", "\u2211\u222b\u221a",
      "\u00bd", "\ufb01", "\u216b", "\u2460", "\uff46\uff55\uff4c\uff4c", "\U0001D4D7\U0001D4EE", "\u03a9", "\u00df",
      "\u0130", "<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>",
      "<|begin_of_text|>", "<|eot_id|>", "[INST]", "<start_of_turn>", "<bos>", "<pad>",
      "<|reserved_special_token_4|>", "\u2581", "\u2581\u2581", "\u0120", "\u010a", "<0x0A>", "\\n", "...", "!!!",
      "???", "---", "\"\"\"", "''", "`code`", "{\"a\": 1}", "http://example.com/a?b=c", "user@mail.org", "#tag",
      "$100", "\u20ac", std::string(1, '\0'), "\x01", "\x7f", "a", " ", ".", ",", std::string(50, 'x'),
      std::string(17, ' '), std::string(9, '\n'), std::string(13, '9'), "The quick brown fox jumps over the lazy dog.",
      "\u01c5", "\ufdfa", "\u0301", "\u064b", "\u24b6", "\U00010000", "\U0010FFFF", "e\u0301\u0301",
      "\uff76\uff80\uff76\uff85"};
  return p;
}

// n strings of 1-8 pieces, a tenth with a leading and a tenth with a trailing space, and "".
// Raw mt19937 words (not a distribution: those differ between standard libraries).
std::vector<std::string> random_strings(unsigned seed, int n) {
  std::mt19937 rng(seed);
  const auto& p = pieces();
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::string s;
    const int k = 1 + static_cast<int>(rng() % 8);
    for (int j = 0; j < k; ++j) s += p[rng() % p.size()];
    if (rng() % 10 == 0) s = " " + s;
    if (rng() % 10 == 0) s += " ";
    out.push_back(s);
  }
  out.emplace_back();
  return out;
}

class HfDifferential : public ::testing::TestWithParam<std::string> {};

TEST_P(HfDifferential, RandomStringsMatchHfTokenizers) {
  ASSERT_NE(GetParam(), "<missing>") << "no tokenizers/*/golden.json under LLMPORT_SHARED";
  const fs::path node_dir = fs::path(LLMPORT_SOURCE_DIR) / "tests/tokenizer/node";
  ASSERT_TRUE(fs::exists(node_dir / "node_modules/tokenizers"))
      << "run `npm ci` in tests/tokenizer/node (.ci/run does)";
  const fs::path dir = shared_path("tokenizers/" + GetParam());
  const auto strings = random_strings(2026u + static_cast<unsigned>(GetParam().size()), 150);
  TempDir t;
  {
    std::ofstream in(t.path() / "strings.jsonl");
    for (const auto& s : strings) in << json(s).dump() << "\n";
  }
  const std::string cmd = "node '" + (node_dir / "hf_tokenize.cjs").string() + "' '" +
                          (dir / "tokenizer.json").string() + "' '" + (t.path() / "strings.jsonl").string() +
                          "' > '" + (t.path() / "hf.jsonl").string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream hf_in(t.path() / "hf.jsonl");
  const Tokenizer& tok = cached_tokenizer(dir);
  std::string line;
  std::size_t i = 0;
  for (; std::getline(hf_in, line) && i < strings.size(); ++i) {
    const json want = json::parse(line);
    const std::string& text = strings[i];
    SCOPED_TRACE("string " + std::to_string(i) + ": " + json(text).dump());
    const auto ids = want.at("ids").get<std::vector<int>>();
    EXPECT_EQ(tok.encode(text, {true, false}), ids);
    EXPECT_EQ(tok.encode(text, {false, false}), want.at("ids_no_special").get<std::vector<int>>());
    EXPECT_EQ(tok.decode(ids, false), want.at("decoded").get<std::string>());
    EXPECT_EQ(tok.decode(ids, true), want.at("decoded_skip").get<std::string>());
  }
  EXPECT_EQ(i, strings.size()) << "the reference answered fewer lines than it was given";
}

INSTANTIATE_TEST_SUITE_P(Shared, HfDifferential, ::testing::ValuesIn(golden_tokenizer_names()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace llmport::test
