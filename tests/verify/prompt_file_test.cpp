// --prompts FILE: what the file says about how to run is read or refused, never ignored.
// The bad-input sweep of session 35 found "n_steps": 0 and 100000 running 32 steps, and a
// prompt's "chat": false rendering the chat template anyway.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/verify.hpp"
#include "support/test_support.hpp"
#include "verify/verify_support.hpp"

namespace llmport {
namespace {
using nlohmann::json;
using test::TempDir;

std::string refused(const TempDir& t, const json& j) {
  test::write_file(t.path() / "p.json", j.dump());
  try {
    read_prompt_file(t.path() / "p.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(PromptFile, KeysThatSayHowToRunAreReadOrRefused) {
  TempDir t;
  const json prompt = {{"name", "a"}, {"kind", "story"}, {"prompt", "Once upon a time"}};
  EXPECT_EQ(refused(t, json::array({prompt})), "");  // the shared public_prompts.json's shape
  json steps = prompt;
  steps["n_steps"] = 0;
  EXPECT_NE(refused(t, json::array({steps})).find("n_steps: is not read by verify"), std::string::npos)
      << refused(t, json::array({steps}));
  EXPECT_NE(refused(t, {{"max_new_tokens", 9}, {"prompts", {prompt}}}).find("max_new_tokens"), std::string::npos);
  json other_case = prompt;
  other_case["N_Steps"] = 3;
  EXPECT_NE(refused(t, json::array({other_case})).find("N_Steps: is not read"), std::string::npos);
  json both = prompt;
  both["text"] = "Once";
  EXPECT_NE(refused(t, json::array({both})).find("given beside \"text\""), std::string::npos);
  json per_prompt_chat = prompt;
  per_prompt_chat["chat"] = false;
  EXPECT_NE(refused(t, json::array({per_prompt_chat})).find("put \"chat\" at its root"), std::string::npos);
  EXPECT_NE(refused(t, {{"chat", "yes"}, {"prompts", {prompt}}}).find("expected true or false"), std::string::npos);
  // A root "chat" is read.
  test::write_file(t.path() / "c.json", json{{"chat", false}, {"prompts", {prompt}}}.dump());
  std::optional<bool> chat;
  EXPECT_EQ(read_prompt_file(t.path() / "c.json", &chat).size(), 1u);
  ASSERT_TRUE(chat.has_value());
  EXPECT_FALSE(*chat);
}

// "chat": true on a model without a chat template cannot be honoured: refused, not run raw.
TEST(PromptFile, ChatOnAModelWithoutATemplateIsRefused) {
  TempDir t;
  test::write_file(t.path() / "c.json",
                   json{{"chat", true}, {"prompts", {{{"name", "a"}, {"text", "Once upon a time"}}}}}.dump());
  VerifyOptions o;
  o.reference = "oracle";
  o.prompts_file = t.path() / "c.json";
  o.engine.threads = 1;
  try {
    run_verify(test::stories_dir(), o);
    ADD_FAILURE() << "ran";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("chat: true, but the model has no chat template"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace llmport
