// A chat request's messages through real chat templates (../shared/tokenizers): a message
// the template would leave out of the prompt is never dropped silently. Qwen3's template
// renders no `developer` and no `function` turn: [developer "Always answer in French",
// user "hi"] was the prompt of [user "hi"] (what OpenAI's current SDKs send as the system
// prompt, lost).
#include <gtest/gtest.h>

#include <fstream>

#include "serve/api_error.hpp"
#include "serve/chat_prompt.hpp"
#include "support/test_support.hpp"

namespace llmport::serve {
namespace {

using ojson = nlohmann::ordered_json;

std::string template_of(const std::string& tokenizer) {
  std::ifstream in(test::shared_path("tokenizers/" + tokenizer + "/tokenizer_config.json"));
  EXPECT_TRUE(in.good()) << tokenizer;
  return nlohmann::json::parse(in).at("chat_template").get<std::string>();
}

ojson msg(const std::string& role, const std::string& content) { return {{"role", role}, {"content", content}}; }

TEST(ChatPrompt, ADeveloperTurnATemplateDropsIsItsSystemTurn) {
  const ChatTemplate qwen3(template_of("qwen3"));
  const ojson vars = nullptr;
  const std::string dev =
      render_chat_prompt(qwen3, ojson::array({msg("developer", "Always answer in French"), msg("user", "hi")}), vars);
  EXPECT_EQ(dev, qwen3.render(ojson::array({msg("system", "Always answer in French"), msg("user", "hi")}), true, vars));
  EXPECT_NE(dev.find("Always answer in French"), std::string::npos);
  // Alone, too (it rendered as the bare generation prompt).
  EXPECT_EQ(render_chat_prompt(qwen3, ojson::array({msg("developer", "Be brief")}), vars),
            qwen3.render(ojson::array({msg("system", "Be brief")}), true, vars));
}

TEST(ChatPrompt, ATemplateThatRendersARoleKeepsIt) {
  // Llama 3's template writes every role into its header: developer stays developer.
  const ChatTemplate llama3(template_of("llama3"));
  const ojson vars = {{"bos_token", "<|begin_of_text|>"}};
  const ojson m = ojson::array({msg("developer", "Be brief"), msg("user", "hi")});
  const std::string text = render_chat_prompt(llama3, m, vars);
  EXPECT_EQ(text, llama3.render(m, true, vars));
  EXPECT_NE(text.find("<|start_header_id|>developer<|end_header_id|>"), std::string::npos) << text;
  // Qwen3 renders tool results (as <tool_response>): kept.
  const ChatTemplate qwen3(template_of("qwen3"));
  const ojson t = ojson::array({msg("user", "weather?"), msg("assistant", "calling"), msg("tool", "sunny, 21 C")});
  EXPECT_EQ(render_chat_prompt(qwen3, t, nullptr), qwen3.render(t, true, nullptr));
}

TEST(ChatPrompt, ARoleTheTemplateDropsIsA400NamingTheMessage) {
  const ChatTemplate qwen3(template_of("qwen3"));
  try {
    render_chat_prompt(qwen3, ojson::array({msg("user", "hi"), msg("function", "{\"temp\": 21}")}), nullptr);
    FAIL() << "a function turn Qwen3's template drops was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "messages[1].role");
    EXPECT_STREQ(e.what(), "this model's chat template does not render role 'function' (the message would be left "
                           "out of the prompt)");
  }
}

}  // namespace
}  // namespace llmport::serve
