// Metadata beside tokenizer.json: bos/eos tokens (string or {content} form, or
// special_tokens_map.json) and the chat template (string, list of named templates, or
// chat_template.jinja).
#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

using nlohmann::json;

json minimal_bpe() {
  return {{"model", {{"type", "BPE"}, {"vocab", {{"<s>", 0}, {"</s>", 1}, {"a", 2}}}, {"merges", json::array()}}}};
}

TEST(TokenizerConfig, StringAndObjectTokenForms) {
  TempDir d;
  write_file(d.path() / "tokenizer.json", minimal_bpe().dump());
  write_file(d.path() / "tokenizer_config.json",
             json{{"bos_token", {{"content", "<s>"}, {"lstrip", false}}}, {"eos_token", "</s>"}, {"chat_template", "T1"}}
                 .dump());
  auto tok = Tokenizer::load(d.path());
  EXPECT_EQ(tok->bos_token(), "<s>");
  EXPECT_EQ(tok->eos_token(), "</s>");
  EXPECT_EQ(tok->bos_id(), 0);
  EXPECT_EQ(tok->eos_id(), 1);
  EXPECT_EQ(tok->chat_template(), "T1");
}

TEST(TokenizerConfig, LoadsFromAFileOfTheModelDirectory) {
  auto dir = shared_path("models/stories260K");
  auto ids = Tokenizer::load(dir)->encode("Once upon a time");
  EXPECT_EQ(Tokenizer::load(dir / "tokenizer.json")->encode("Once upon a time"), ids);
  EXPECT_EQ(Tokenizer::load(dir / "config.json")->encode("Once upon a time"), ids);
  EXPECT_EQ(Tokenizer::load(dir / "config.json")->eos_token(), "</s>");
}

TEST(TokenizerConfig, SpecialTokensMapFallbackAndNoConfig) {
  TempDir d;
  write_file(d.path() / "tokenizer.json", minimal_bpe().dump());
  auto bare = Tokenizer::load(d.path());
  EXPECT_EQ(bare->bos_token(), "");
  EXPECT_EQ(bare->chat_template(), "");
  EXPECT_FALSE(bare->bos_id().has_value());
  write_file(d.path() / "special_tokens_map.json", json{{"bos_token", "<s>"}, {"eos_token", {{"content", "</s>"}}}}.dump());
  auto tok = Tokenizer::load(d.path());
  EXPECT_EQ(tok->bos_token(), "<s>");
  EXPECT_EQ(tok->eos_token(), "</s>");
}

TEST(TokenizerConfig, NamedTemplateListTakesDefault) {
  TempDir d;
  write_file(d.path() / "tokenizer.json", minimal_bpe().dump());
  write_file(d.path() / "tokenizer_config.json",
             json{{"chat_template",
                   {{{"name", "tool_use"}, {"template", "TOOLS"}}, {{"name", "default"}, {"template", "DEFAULT"}}}}}
                 .dump());
  EXPECT_EQ(Tokenizer::load(d.path())->chat_template(), "DEFAULT");
}

TEST(TokenizerConfig, ChatTemplateJinjaFile) {
  TempDir d;
  write_file(d.path() / "tokenizer.json", minimal_bpe().dump());
  write_file(d.path() / "tokenizer_config.json", json{{"chat_template", "FROM_CONFIG"}}.dump());
  write_file(d.path() / "chat_template.jinja", "{{ messages }}\n");
  EXPECT_EQ(Tokenizer::load(d.path())->chat_template(), "{{ messages }}\n");
}

TEST(TokenizerConfig, SharedTemplatesMatchTheirConfig) {
  for (const auto& name : golden_tokenizer_names()) {
    ASSERT_NE(name, "<missing>");
    auto dir = shared_path("tokenizers/" + name);
    json cfg = read_json(dir / "tokenizer_config.json");
    std::string want = cfg.contains("chat_template") && cfg["chat_template"].is_string() ? cfg["chat_template"].get<std::string>() : "";
    EXPECT_EQ(cached_tokenizer(dir).chat_template(), want) << name;
  }
}

}  // namespace
}  // namespace llmport::test
