// Every `chat` entry of every shared tokenizer golden.json: the template (from
// tokenizer_config.json or the named .jinja file) renders to exactly `rendered`, and the
// rendering tokenizes (add_special_tokens=false) to exactly `ids`. Folders are iterated,
// never listed; missing data fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "llmport/chat_template.hpp"
#include "llmport/tokenizer.hpp"
#include "chat/chat_fixtures.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

using namespace llmport::test;

namespace {

/// Tokenizers are large (gemma3: 33 MB); load each folder's once for all tests.
const llmport::Tokenizer& tokenizer_of(const fs::path& dir) {
  static std::map<fs::path, std::unique_ptr<llmport::Tokenizer>> cache;
  auto& t = cache[dir];
  if (!t) t = llmport::Tokenizer::load(dir);
  return *t;
}

std::string render(const ChatCase& c) {
  return llmport::render_chat_template(template_of(c), c.entry.at("messages"),
                                       c.entry.at("add_generation_prompt").get<bool>(), vars_of(c));
}

}  // namespace

TEST(ChatGolden, SharedDataHasChatEntries) {
  // Llama-3, Llama-3.1 (.jinja), Qwen3 and Gemma templates are exercised through these.
  EXPECT_GE(chat_cases().size(), 4u);
}

TEST(ChatGolden, RendersExactly) {
  for (const auto& c : chat_cases()) {
    SCOPED_TRACE(c.name());
    std::string got;
    ASSERT_NO_THROW(got = render(c));
    EXPECT_EQ(got, c.entry.at("rendered").get<std::string>());
  }
}

TEST(ChatGolden, ChatTemplateObjectRendersEveryTurnTheSame) {
  // One parsed ChatTemplate reused across renders gives the same text as a fresh parse.
  for (const auto& c : chat_cases()) {
    SCOPED_TRACE(c.name());
    llmport::ChatTemplate t(template_of(c));
    for (int i = 0; i < 2; ++i)
      EXPECT_EQ(t.render(c.entry.at("messages"), c.entry.at("add_generation_prompt").get<bool>(), vars_of(c)), c.entry.at("rendered").get<std::string>());
  }
}

TEST(ChatGolden, TokenizesToIdsWithExactlyOneBos) {
  for (const auto& c : chat_cases()) {
    SCOPED_TRACE(c.name());
    const auto& tok = tokenizer_of(c.dir);
    llmport::EncodeOptions opt;
    opt.add_special_tokens = false;  // the template writes the BOS itself
    std::vector<int> ids = tok.encode(render(c), opt);
    EXPECT_EQ(ids, c.entry.at("ids").get<std::vector<int>>());
  }
}

TEST(ChatGolden, TokenizerExposesTheTemplateAndSpecialTokens) {
  // Tokenizer::chat_template() / bos_token() / eos_token() feed `llmport chat-template`.
  for (const auto& c : chat_cases()) {
    if (c.entry.at("template").get<std::string>() != "tokenizer_config.json") continue;
    SCOPED_TRACE(c.name());
    const auto& tok = tokenizer_of(c.dir);
    EXPECT_EQ(tok.chat_template(), template_of(c));
    const auto& st = c.entry.at("special_token_vars");
    EXPECT_EQ(tok.bos_token(), st.at("bos_token").is_null() ? "" : st.at("bos_token").get<std::string>());
    EXPECT_EQ(tok.eos_token(), st.at("eos_token").is_null() ? "" : st.at("eos_token").get<std::string>());
  }
}

TEST(ChatGolden, InstructPromptIdsMatchSystemUserEntries) {
  // instruct_prompt_ids([system,] user) is what `run --prompt` feeds an instruct model: the
  // golden entries made of a system and/or one user message with no extra variables.
  int checked = 0;
  for (const auto& c : chat_cases()) {
    const auto& m = c.entry.at("messages");
    if (c.entry.at("template").get<std::string>() != "tokenizer_config.json" || !c.entry["extra_vars"].empty()) continue;
    bool sys = m.size() == 2 && m[0]["role"] == "system" && m[1]["role"] == "user";
    bool user_only = m.size() == 1 && m[0]["role"] == "user";
    if (!sys && !user_only) continue;
    SCOPED_TRACE(c.name());
    std::vector<int> ids = llmport::instruct_prompt_ids(tokenizer_of(c.dir), sys ? m[0]["content"].get<std::string>() : "",
                                                        m.back()["content"].get<std::string>());
    EXPECT_EQ(ids, c.entry.at("ids").get<std::vector<int>>());
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(ChatGolden, StopIdsIncludeTheTokenizerEos) {
  // TRAPS.md 15: Llama-3 Instruct stops on both <|end_of_text|> (128001, config eos) and
  // <|eot_id|> (128009, the tokenizer's eos).
  const auto& llama3 = tokenizer_of(llmport::test::shared_path("tokenizers/llama3"));
  EXPECT_EQ(llmport::chat_stop_ids({128001, 128001}, llama3), (std::vector<int>{128001, 128009}));
  for (const auto& c : chat_cases()) {
    SCOPED_TRACE(c.name());
    const auto& tok = tokenizer_of(c.dir);
    auto eos = tok.token_to_id(tok.eos_token());
    ASSERT_TRUE(eos.has_value());
    EXPECT_EQ(llmport::chat_stop_ids({}, tok), std::vector<int>{*eos});
  }
}
