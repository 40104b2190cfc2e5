// The stories260K tokenizer reproduces the prompt ids (and the decoded text) of every case
// of models/stories260K/golden/public.json.
#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

using nlohmann::json;

TEST(Stories260KTokenizer, PromptIdsOfEveryPublicCase) {
  auto dir = shared_path("models/stories260K");
  json g = read_json(dir / "golden/public.json");
  const Tokenizer& tok = cached_tokenizer(dir);
  ASSERT_FALSE(g["cases"].empty());
  for (const auto& c : g["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    EXPECT_EQ(tok.encode(c["prompt"].get<std::string>()), c["prompt_ids"].get<std::vector<int>>());
    std::vector<int> all = c["prompt_ids"].get<std::vector<int>>();
    for (int id : c["generated_ids"]) all.push_back(id);
    EXPECT_EQ(tok.decode(all, true), c["full_text"].get<std::string>());
  }
}

TEST(Stories260KTokenizer, SpecialTokensFromConfig) {
  auto dir = shared_path("models/stories260K");
  const Tokenizer& tok = cached_tokenizer(dir);
  json cfg = read_json(dir / "tokenizer_config.json");
  EXPECT_EQ(tok.bos_token(), cfg["bos_token"].get<std::string>());
  EXPECT_EQ(tok.eos_token(), cfg["eos_token"].get<std::string>());
  for (const auto& [id, t] : cfg["added_tokens_decoder"].items()) {
    EXPECT_EQ(tok.token_to_id(t["content"].get<std::string>()), std::stoi(id));
    EXPECT_EQ(tok.is_special(std::stoi(id)), t["special"].get<bool>());
  }
  EXPECT_EQ(tok.vocab_size(), read_json(dir / "config.json")["vocab_size"].get<int>());
}

}  // namespace
}  // namespace llmport::test
