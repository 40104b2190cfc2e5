// Every case of every $LLMPORT_SHARED/tokenizers/*/golden.json (ids produced by the HF Rust
// tokenizers library) must match id for id and byte for byte.
#include <thread>

#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

using nlohmann::json;

class GoldenTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTokenizer, EveryCaseMatchesReference) {
  ASSERT_NE(GetParam(), "<missing>") << "no tokenizers/*/golden.json under LLMPORT_SHARED";
  auto dir = shared_path("tokenizers/" + GetParam());
  json g = read_json(dir / "golden.json");
  const Tokenizer& tok = cached_tokenizer(dir);
  ASSERT_TRUE(g["cases"].is_array());
  ASSERT_FALSE(g["cases"].empty());
  for (const auto& c : g["cases"]) {
    SCOPED_TRACE("case " + c["id"].get<std::string>());
    std::string text = c["text"];
    EXPECT_EQ(tok.encode(text, {true, false}), c["ids"].get<std::vector<int>>());
    EXPECT_EQ(tok.encode(text, {false, false}), c["ids_no_special"].get<std::vector<int>>());
    EXPECT_EQ(tok.encode(text, {false, true}), c["ids_split_special"].get<std::vector<int>>());
    auto ids = c["ids"].get<std::vector<int>>();
    EXPECT_EQ(tok.decode(ids, false), c["decoded"].get<std::string>());
    EXPECT_EQ(tok.decode(ids, true), c["decoded_skip_special"].get<std::string>());
    if (c.contains("tokens")) {
      auto tokens = c["tokens"].get<std::vector<std::string>>();
      ASSERT_EQ(tokens.size(), ids.size());
      for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(tok.id_to_token(ids[i]), tokens[i]);
    }
  }
}

// apply_chat_template(tokenize=True) == encode(rendered, add_special_tokens=false).
TEST_P(GoldenTokenizer, ChatRenderingsEncodeToReferenceIds) {
  ASSERT_NE(GetParam(), "<missing>");
  auto dir = shared_path("tokenizers/" + GetParam());
  json g = read_json(dir / "golden.json");
  const Tokenizer& tok = cached_tokenizer(dir);
  if (!g.contains("chat")) return;  // a tokenizer without a template has no chat entries
  for (const auto& c : g["chat"]) {
    SCOPED_TRACE("chat " + c["id"].get<std::string>());
    EXPECT_EQ(tok.encode(c["rendered"].get<std::string>(), {false, false}), c["ids"].get<std::vector<int>>());
  }
}

TEST_P(GoldenTokenizer, SummaryVocabAndSpecialTokens) {
  ASSERT_NE(GetParam(), "<missing>");
  auto dir = shared_path("tokenizers/" + GetParam());
  json s = read_json(dir / "golden.json")["summary"];
  const Tokenizer& tok = cached_tokenizer(dir);
  EXPECT_EQ(tok.vocab_size(), s["vocab_size_with_added"].get<int>());
  for (const char* name : {"bos_token", "eos_token"}) {
    const json& want = s["special"][name];
    std::string got = std::string(name) == "bos_token" ? tok.bos_token() : tok.eos_token();
    if (want.is_null()) {
      EXPECT_EQ(got, "") << name;
    } else {
      EXPECT_EQ(got, want["content"].get<std::string>()) << name;
      EXPECT_EQ(tok.token_to_id(got), want["id"].get<int>()) << name;
    }
  }
  if (s.contains("non_special_added_tokens") && s["non_special_added_tokens"].is_array()) {
    for (const auto& e : s["non_special_added_tokens"]) {
      EXPECT_FALSE(tok.is_special(e[0].get<int>())) << e[1];
      EXPECT_EQ(tok.id_to_token(e[0].get<int>()), e[1].get<std::string>());
    }
  }
  int n_special = 0;
  for (int id = 0; id < tok.vocab_size(); ++id) n_special += tok.is_special(id);
  EXPECT_EQ(n_special, s["n_special_added_tokens"].get<int>());
}

INSTANTIATE_TEST_SUITE_P(Shared, GoldenTokenizer, ::testing::ValuesIn(golden_tokenizer_names()),
                         tokenizer_test_name);

}  // namespace
}  // namespace llmport::test

namespace llmport::test {
namespace {

// const methods are thread-safe: four threads encoding the same golden texts (sharing the
// word cache) get the reference ids.
TEST(GoldenTokenizerThreads, ConcurrentEncodeMatchesReference) {
  auto names = golden_tokenizer_names();
  ASSERT_NE(names.front(), "<missing>");
  auto dir = shared_path("tokenizers/" + names.front());
  auto g = read_json(dir / "golden.json");
  auto tok = Tokenizer::load(dir);  // fresh: empty word cache
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep)
        for (const auto& c : g["cases"])
          mismatches[static_cast<std::size_t>(t)] +=
              tok->encode(c["text"].get<std::string>(), {false, false}) != c["ids_no_special"].get<std::vector<int>>();
    });
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

}  // namespace
}  // namespace llmport::test
