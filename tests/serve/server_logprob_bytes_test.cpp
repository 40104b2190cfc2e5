// Chat logprobs `bytes` are each token's own bytes (OpenAI: "useful where characters are
// represented by multiple tokens and their byte representations must be combined"). A
// random-weight tiny Llama with stories260K's tokenizer (512 pieces, 256 of them ByteFallback
// bytes) writes byte pieces, which the streamed text holds until a later piece settles them:
// `bytes` once followed that text, [] for a held byte and the whole held run on the piece
// after it.
#include "serve/serve_test_util.hpp"

namespace llmport::test {
namespace {

using json = nlohmann::json;

std::vector<int> byte_list(const json& a) { return a.get<std::vector<int>>(); }

TEST(ServeLogprobBytes, EachTokenCarriesItsOwnBytes) {
  TempDir dir;
  const std::string model = (dir.path() / "m").string();
  const auto r = run_llmport({"synth", "--preset", "tiny-llama", "--tokenizer",
                              shared_path("models/stories260K").string(), "--out", model});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto tmpl = dir.path() / "t.jinja";
  write_file(tmpl, "{% for m in messages %}{{ m['content'] }}{% endfor %}");
  ServerProcess server({model, "--chat-template-file", tmpl.string(), "--threads", "1"});
  ASSERT_GT(server.port(), 0) << server.stderr_text();
  ASSERT_TRUE(server.wait_ready()) << server.stderr_text();
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Once upon"}}})},
                     {"max_tokens", 24},
                     {"temperature", 0},
                     {"logprobs", true},
                     {"top_logprobs", 5}};
  const auto res = curl("POST", server.url("/v1/chat/completions"), body.dump());
  ASSERT_EQ(res.status, 200) << res.body;
  const json choice = json::parse(res.body)["choices"][0];
  const std::string content = choice["message"]["content"];
  std::string joined;
  int held = 0, replaced_alternatives = 0;
  for (const auto& t : choice["logprobs"]["content"]) {
    const std::vector<int> b = byte_list(t["bytes"]);
    for (int c : b) joined.push_back(static_cast<char>(c));
    // A byte piece held back adds no text yet; it is still one byte.
    if (t["token"] == "") {
      ++held;
      EXPECT_EQ(b.size(), 1u) << t.dump();
    }
    // An alternative byte >= 0x80 alone decodes to U+FFFD; its bytes are the byte.
    for (const auto& a : t["top_logprobs"])
      if (a["token"] == "\xEF\xBF\xBD") {
        ++replaced_alternatives;
        ASSERT_EQ(a["bytes"].size(), 1u) << a.dump();
        EXPECT_GE(a["bytes"][0].get<int>(), 0x80) << a.dump();
      }
  }
  // The answer is valid UTF-8 here, so the tokens' bytes join to its text.
  EXPECT_EQ(joined, content);
  EXPECT_GT(held, 0) << "no byte piece was held: the case is not exercised";
  EXPECT_GT(replaced_alternatives, 0) << "no alternative was half a character: the case is not exercised";

  // After a special piece the next token's own text keeps its leading space (decoded alone
  // it lost it: bytes "so" where the text said " so"; round 11's sample).
  json sampled = body;
  sampled["messages"][0]["content"] = "Once upon a time";
  sampled["max_tokens"] = 6;
  sampled["temperature"] = 1.2;
  sampled["seed"] = 69;
  const auto res2 = curl("POST", server.url("/v1/chat/completions"), sampled.dump());
  ASSERT_EQ(res2.status, 200) << res2.body;
  const json choice2 = json::parse(res2.body)["choices"][0];
  std::string joined2;
  for (const auto& t : choice2["logprobs"]["content"])
    for (int c : byte_list(t["bytes"])) joined2.push_back(static_cast<char>(c));
  EXPECT_EQ(joined2, choice2["message"]["content"].get<std::string>());
}

}  // namespace
}  // namespace llmport::test
