// `llmport serve` on a chat model (a tiny synthetic Qwen3 with the real Qwen3 tokenizer):
// /v1/chat/completions whole and streamed with curl equals `llmport run`'s greedy answer
// to the same message, chat logprobs, and the official openai package for Node
// (tests/serve/node: a chat completion, a streamed one, a 401, a 400).
#include "serve/serve_test_util.hpp"

namespace llmport::test {
namespace {

using json = nlohmann::json;

class ServeChat : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = (dir_->path() / "tiny-qwen3").string();
    const auto r = run_llmport({"synth", "--preset", "tiny-qwen3", "--tokenizer",
                                shared_path("tokenizers/qwen3").string(), "--out", model_});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    server_ = new ServerProcess({model_, "--parallel", "2", "--ctx-size", "1024", "--threads", "2",
                                 "--api-key", "k1"});
    ASSERT_GT(server_->port(), 0) << server_->stderr_text();
    ASSERT_TRUE(server_->wait_ready()) << server_->stderr_text();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  static HttpResult chat(const json& body) {
    return curl("POST", server_->url("/v1/chat/completions"), body.dump(), {"Authorization: Bearer k1"});
  }
  static TempDir* dir_;
  static std::string model_;
  static ServerProcess* server_;
};
TempDir* ServeChat::dir_ = nullptr;
std::string ServeChat::model_;
ServerProcess* ServeChat::server_ = nullptr;

const json kMessages = json::array({{{"role", "user"}, {"content", "Hello, who are you?"}}});

TEST_F(ServeChat, GreedyChatEqualsRunsAnswerWholeAndStreamed) {
  const auto run = run_llmport({"run", model_, "--prompt", "Hello, who are you?", "--temperature", "0",
                                "--n-tokens", "12", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto want = json::parse(run.out);
  const auto r = chat({{"messages", kMessages}, {"temperature", 0}, {"max_tokens", 12}});
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = json::parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], want["text"]);
  EXPECT_EQ(j["usage"]["prompt_tokens"], want["prompt_ids"].size());
  EXPECT_EQ(j["usage"]["completion_tokens"], want["generated_ids"].size());

  const auto s = chat({{"messages", kMessages}, {"temperature", 0}, {"max_tokens", 12}, {"stream", true}});
  ASSERT_EQ(s.status, 200) << s.body;
  const auto ev = sse_payloads(s.body);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev.back(), "[DONE]");
  const auto first = json::parse(ev[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string text, reason;
  for (std::size_t i = 0; i + 1 < ev.size(); ++i) {
    const auto k = json::parse(ev[i]);  // every chunk parses: valid UTF-8 JSON
    const auto& d = k["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
    if (!k["choices"][0]["finish_reason"].is_null()) reason = k["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, want["text"]);
  EXPECT_EQ(reason, j["choices"][0]["finish_reason"]);
}

TEST_F(ServeChat, ChatLogprobsAndDefaultBudget) {
  const auto r = chat({{"messages", kMessages}, {"temperature", 0}, {"max_tokens", 3}, {"logprobs", true},
                       {"top_logprobs", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  const auto lp = json::parse(r.body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 3u);
  for (const auto& t : lp) {
    EXPECT_TRUE(t["token"].is_string());
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    EXPECT_TRUE(t["bytes"].is_array());
    EXPECT_EQ(t["top_logprobs"].size(), 2u);
    EXPECT_EQ(t["top_logprobs"][0]["logprob"], t["logprob"]);  // greedy picks the best
  }
  // Without max_tokens a chat may use the rest of the 512-token slot: over it is a 400.
  const auto over = chat({{"messages", kMessages}, {"max_tokens", 600}});
  EXPECT_EQ(over.status, 400);
  EXPECT_EQ(json::parse(over.body)["error"]["param"], "max_tokens");
}

// Completions' text_offset counts characters, as OpenAI's (and vLLM's: Python string
// indices): it counted bytes, so after a CJK token the offsets ran ahead of the text by two
// per character. This model's random weights write CJK text through the real Qwen3 vocab.
TEST_F(ServeChat, CompletionTextOffsetsCountCharacters) {
  const json req = {{"prompt", "Hello"}, {"max_tokens", 12}, {"temperature", 0}, {"logprobs", 1}};
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    json body = req;
    body["stream"] = stream;
    const auto r = curl("POST", server_->url("/v1/completions"), body.dump(), {"Authorization: Bearer k1"});
    ASSERT_EQ(r.status, 200) << r.body;
    std::vector<std::string> tokens;
    std::vector<int> offsets;
    auto take = [&](const json& choice) {
      for (const auto& t : choice["logprobs"]["tokens"]) tokens.push_back(t);
      for (const auto& o : choice["logprobs"]["text_offset"]) offsets.push_back(o);
    };
    if (stream) {
      for (const auto& ev : sse_payloads(r.body)) {
        const auto j = json::parse(ev, nullptr, false);
        if (j.is_object() && !j["choices"].empty() && j["choices"][0]["logprobs"].is_object()) take(j["choices"][0]);
      }
    } else {
      take(json::parse(r.body)["choices"][0]);
    }
    ASSERT_EQ(tokens.size(), offsets.size());
    std::u32string joined;  // the text as code points: a Python str
    std::string joined_bytes;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      EXPECT_EQ(offsets[i], static_cast<int>(joined.size())) << i << " " << tokens[i];
      for (std::size_t k = 0; k < tokens[i].size(); ++k)
        if ((static_cast<unsigned char>(tokens[i][k]) & 0xC0) != 0x80) joined.push_back(U'x');
      joined_bytes += tokens[i];
    }
    ASSERT_GT(joined_bytes.size(), joined.size()) << "no multi-byte character in '" << joined_bytes
                                                  << "': the check would not tell bytes from characters";
  }
}

TEST_F(ServeChat, OfficialOpenAiNodeClient) {
  const std::string dir = std::string(LLMPORT_SOURCE_DIR) + "/tests/serve/node";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/openai"))
      << "run `npm ci` in tests/serve/node (.ci/run does)";
  const auto r = run_program({"node", dir + "/chat_client.mjs", server_->url("/v1"), "k1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = json::parse(r.out);
  EXPECT_EQ(j["status401"], 401);
  EXPECT_EQ(j["status400"], 400);
  const auto c = chat({{"messages", kMessages}, {"temperature", 0}, {"max_tokens", 12}});
  EXPECT_EQ(j["content"], json::parse(c.body)["choices"][0]["message"]["content"]);
}

}  // namespace
}  // namespace llmport::test
