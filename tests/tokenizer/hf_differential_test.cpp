// Differential test against the reference itself: strings no golden holds, built at random
// (fixed seed) from pieces that stress tokenizers (contractions, digit runs, whitespace
// kinds, NFC/NFD, scripts without spaces, ZWJ emoji, special-token text, byte-fallback
// bytes), encoded and decoded by Hugging Face's Rust tokenizers (the Node binding the
// shared goldens came from, tests/tokenizer/node) and by llmport, for every shared
// tokenizer. The goldens fix ~43 strings each; this keeps the same reference for the
// strings a user writes.
#include <fstream>

#include "support/reference_process.hpp"
#include "support/random_text.hpp"
#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class HfDifferential : public ::testing::TestWithParam<std::string> {};

TEST_P(HfDifferential, RandomStringsMatchHfTokenizers) {
  ASSERT_NE(GetParam(), "<missing>") << "no tokenizers/*/golden.json under LLMPORT_SHARED";
  const fs::path dir = shared_path("tokenizers/" + GetParam());
  const auto strings = random_strings(2026u + static_cast<unsigned>(GetParam().size()), 150);
  TempDir t;
  {
    std::ofstream in(t.path() / "strings.jsonl");
    for (const auto& s : strings) in << json(s).dump() << "\n";
  }
  const auto hf = run_reference({"node", node_script("tokenizer", "tokenizers", "hf_tokenize.cjs"),
                                 (dir / "tokenizer.json").string(), (t.path() / "strings.jsonl").string()});
  ASSERT_EQ(hf.size(), strings.size()) << "the reference answered another number of lines";
  const Tokenizer& tok = cached_tokenizer(dir);
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const json want = json::parse(hf[i]);
    const std::string& text = strings[i];
    SCOPED_TRACE("string " + std::to_string(i) + ": " + json(text).dump());
    const auto ids = want.at("ids").get<std::vector<int>>();
    EXPECT_EQ(tok.encode(text, {true, false}), ids);
    EXPECT_EQ(tok.encode(text, {false, false}), want.at("ids_no_special").get<std::vector<int>>());
    EXPECT_EQ(tok.decode(ids, false), want.at("decoded").get<std::string>());
    EXPECT_EQ(tok.decode(ids, true), want.at("decoded_skip").get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, HfDifferential, ::testing::ValuesIn(golden_tokenizer_names()),
                         tokenizer_test_name);

}  // namespace
}  // namespace llmport::test
