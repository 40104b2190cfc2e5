// OpenAI request parsing: defaults, every field's type and range errors (400 naming the
// field), and the context rule n_prompt + max_tokens - 1 <= context.
#include <gtest/gtest.h>

#include "serve/api_error.hpp"
#include "serve/metrics.hpp"
#include "serve/openai_request.hpp"

namespace llmport::serve {
namespace {

std::string param_of(const std::string& body, Endpoint ep = Endpoint::Completions) {
  try {
    parse_request(body, ep);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param().empty() ? "<none>" : e.param();
  }
  return "<accepted>";
}

// 8 MiB of empty objects parsed into ~580 MB (one request; four at once 1.7 GB): the
// parsed size is bounded by counting while parsing, not only the body's bytes.
TEST(OpenAiRequest, ABodyOfTooManyObjectsOrValuesIs413BeforeItIsBuilt) {
  auto body_with = [](const std::string& item, long n) {
    std::string b = R"({"prompt":"x","max_tokens":1,"foo":[)";
    for (long i = 0; i < n; ++i) b += (i ? "," : "") + item;
    return b + "]}";
  };
  auto status_of = [](const std::string& body) {
    try {
      parse_request(body, Endpoint::Completions);
      return 200;
    } catch (const ApiError& e) {
      return e.status();
    }
  };
  // The root object and "foo" are two containers of the limit.
  EXPECT_EQ(status_of(body_with("{}", kMaxJsonContainers - 2)), 200);
  try {
    parse_request(body_with("{}", kMaxJsonContainers - 1), Endpoint::Completions);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 413);
    EXPECT_STREQ(e.what(), "request body: more than 65536 JSON objects and arrays");
  }
  EXPECT_EQ(status_of(body_with("1", kMaxJsonValues - 8)), 200);
  EXPECT_EQ(status_of(body_with("1", kMaxJsonValues + 1)), 413);
  // A long token-id prompt is one array of values: 200k ids are fine.
  std::string ids = R"({"prompt":[)";
  for (int i = 0; i < 200000; ++i) ids += (i ? ",7" : "7");
  EXPECT_EQ(parse_request(ids + R"(],"max_tokens":1})", Endpoint::Completions).prompt_ids->size(), 200000u);
}

TEST(OpenAiRequest, CompletionDefaultsAreOpenAis) {
  const auto r = parse_request(R"({"prompt":"hi","unknown_field":{"x":1},"user":"u"})", Endpoint::Completions);
  ASSERT_TRUE(r.prompt_text);
  EXPECT_EQ(*r.prompt_text, "hi");
  EXPECT_FALSE(r.max_tokens);
  EXPECT_EQ(r.sampling.temperature, 1.0);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.logprobs);
  EXPECT_EQ(token_budget(r, 5, 100), 16);
  EXPECT_EQ(token_budget(r, 95, 100), 6);
}

TEST(OpenAiRequest, FieldsAreRead) {
  const auto r = parse_request(
      R"({"prompt":[1,2,3],"max_tokens":7,"temperature":0,"top_p":0.5,"top_k":3,"seed":42,
          "stop":["a","b"],"stream":true,"stream_options":{"include_usage":true},"logprobs":5,"n":1,"echo":false})",
      Endpoint::Completions);
  ASSERT_TRUE(r.prompt_ids);
  EXPECT_EQ(*r.prompt_ids, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(*r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.0);
  EXPECT_EQ(r.sampling.top_p, 0.5);
  EXPECT_EQ(r.sampling.top_k, 3);
  EXPECT_EQ(r.sampling.seed, 42u);
  EXPECT_TRUE(r.seeded);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 5);
  const auto c = parse_request(R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
                                  "logprobs":true,"top_logprobs":2,"stop":"x"})", Endpoint::Chat);
  EXPECT_EQ(c.messages[0]["content"], "ab");
  EXPECT_EQ(c.top_logprobs, 2);
  EXPECT_EQ(c.stop, (std::vector<std::string>{"x"}));
  EXPECT_EQ(token_budget(c, 10, 100), 91);  // chat: the rest of the context
  // Chat's max_completion_tokens replaces the deprecated max_tokens, and wins beside it.
  const std::string msgs = R"("messages":[{"role":"user","content":"a"}])";
  EXPECT_EQ(*parse_request("{" + msgs + R"(,"max_completion_tokens":5})", Endpoint::Chat).max_tokens, 5);
  EXPECT_EQ(*parse_request("{" + msgs + R"(,"max_tokens":3,"max_completion_tokens":5})", Endpoint::Chat).max_tokens,
            5);
  EXPECT_EQ(*parse_request("{" + msgs + R"(,"max_tokens":3})", Endpoint::Chat).max_tokens, 3);
}

// A content part whose "type" is not a string is a 400 naming the message's content (found
// by the serve_request fuzzer: json::value() threw a type_error, a 500 in the server).
TEST(OpenAiRequest, AContentPartTypeThatIsNotAStringIs400) {
  for (const char* type : {"7", "null", "[\"text\"]", "{}"}) {
    SCOPED_TRACE(type);
    const std::string body = std::string(R"({"messages":[{"role":"user","content":[{"type":)") + type +
                             R"(,"text":"hi"}]}]})";
    EXPECT_EQ(param_of(body, Endpoint::Chat), "messages[0].content");
  }
  EXPECT_EQ(param_of(R"({"messages":[{"role":"user","content":[{"text":"hi"}]}]})", Endpoint::Chat), "<accepted>");
  // A text part without its text, or with text of another type, names that text (it read
  // "only text content parts are supported").
  EXPECT_EQ(param_of(R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text"}]}]})",
                     Endpoint::Chat),
            "messages[0].content[1].text");
  EXPECT_EQ(param_of(R"({"messages":[{"role":"user","content":[{"type":"text","text":5}]}]})", Endpoint::Chat),
            "messages[0].content[0].text");
}

// Integers beyond int64 (or beyond 2^53 as floats) are out of range, never wrapped to a
// negative or small value, nor called "a fraction".
TEST(OpenAiRequest, IntegersBeyondInt64AreOutOfRangeNotWrapped) {
  for (const char* body : {R"({"prompt":"a","max_tokens":18446744073709551615})",
                           R"({"prompt":"a","max_tokens":99999999999999999999})",
                           R"({"prompt":"a","max_tokens":1e30})",
                           R"({"prompt":"a","seed":9223372036854775808})"}) {
    SCOPED_TRACE(body);
    try {
      parse_request(body, Endpoint::Completions);
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_NE(std::string(e.what()).find("integer out of range"), std::string::npos) << e.what();
      EXPECT_TRUE(e.param() == "max_tokens" || e.param() == "seed") << e.param();
    }
  }
  // Just inside: INT64_MAX parses (and max_tokens is then capped by the context rule).
  EXPECT_EQ(param_of(R"({"prompt":"a","seed":9223372036854775807})"), "<accepted>");
}

TEST(OpenAiRequest, WrongTypesAndValuesName400TheirField) {
  EXPECT_EQ(param_of("{not json"), "<none>");
  EXPECT_EQ(param_of("[1,2]"), "<none>");
  EXPECT_EQ(param_of(R"({})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":5})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":[1,-2]})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":"a","max_tokens":"10"})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt":"a","max_tokens":0})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt":"a","max_tokens":1.5})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt":"a","temperature":"hot"})"), "temperature");
  EXPECT_EQ(param_of(R"({"prompt":"a","temperature":3})"), "temperature");
  EXPECT_EQ(param_of(R"({"prompt":"a","top_p":0})"), "top_p");
  EXPECT_EQ(param_of(R"({"prompt":"a","top_k":-1})"), "top_k");
  EXPECT_EQ(param_of(R"({"prompt":"a","seed":"x"})"), "seed");
  EXPECT_EQ(param_of(R"({"prompt":"a","stop":3})"), "stop");
  EXPECT_EQ(param_of(R"({"prompt":"a","stop":[""]})"), "stop");
  EXPECT_EQ(param_of(R"({"prompt":"a","stream":"yes"})"), "stream");
  EXPECT_EQ(param_of(R"({"prompt":"a","n":2})"), "n");
  EXPECT_EQ(param_of(R"({"prompt":"a","echo":true})"), "echo");
  EXPECT_EQ(param_of(R"({"prompt":"a","logprobs":21})"), "logprobs");
  EXPECT_EQ(param_of(R"({"prompt":"a","logprobs":true})"), "logprobs");
  EXPECT_EQ(param_of(R"({"messages":"hi"})", Endpoint::Chat), "messages");
  EXPECT_EQ(param_of(R"({"messages":[]})", Endpoint::Chat), "messages");
  EXPECT_EQ(param_of(R"({"messages":[{"content":"x"}]})", Endpoint::Chat), "messages[0].role");
  EXPECT_EQ(param_of(R"({"messages":[{"role":"user","content":5}]})", Endpoint::Chat), "messages[0].content");
  // Content is required but for an assistant turn (OpenAI's rule).
  EXPECT_EQ(param_of(R"({"messages":[{"role":"user"}]})", Endpoint::Chat), "messages[0].content");
  EXPECT_EQ(param_of(R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":null}]})", Endpoint::Chat),
            "messages[1].content");
  EXPECT_EQ(param_of(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant"},{"role":"user","content":"y"}]})",
                     Endpoint::Chat),
            "<accepted>");
  EXPECT_EQ(param_of(R"({"messages":[{"role":"user","content":"x"}],"logprobs":3})", Endpoint::Chat), "logprobs");
  EXPECT_EQ(param_of(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", Endpoint::Chat), "top_logprobs");
  // A role the chat template does not know was dropped from the prompt without a word
  // (Qwen3's template: "hacker" left 3 of 15 prompt tokens).
  EXPECT_EQ(param_of(R"({"messages":[{"role":"hacker","content":"x"}]})", Endpoint::Chat), "messages[0].role");
  EXPECT_EQ(param_of(R"({"messages":[{"role":"user","content":"x"},{"role":"","content":"y"}]})", Endpoint::Chat),
            "messages[1].role");
  for (const char* role : {"system", "developer", "user", "assistant", "tool", "function"})
    EXPECT_EQ(param_of(std::string(R"({"messages":[{"role":")") + role + R"(","content":"x"}]})", Endpoint::Chat),
              "<accepted>")
        << role;
  // null means "not given".
  EXPECT_EQ(param_of(R"({"prompt":"a","max_tokens":null,"stop":null,"seed":null})"), "<accepted>");
}

// Fields whose effect is not implemented: their defaults are accepted (clients send them),
// anything else is a 400 naming the field (it was answered without the effect, 200).
TEST(OpenAiRequest, UnimplementedFieldsAreAcceptedAtTheirDefaultsOnly) {
  const std::string chat = R"({"messages":[{"role":"user","content":"x"}],)";
  const std::string defaults_c = R"({"prompt":"a","presence_penalty":0,"frequency_penalty":0.0,"logit_bias":{},)"
                                 R"("best_of":1,"suffix":""})";
  EXPECT_EQ(param_of(defaults_c), "<accepted>");
  EXPECT_EQ(param_of(chat + R"("tools":[],"tool_choice":"none","response_format":{"type":"text"},)"
                            R"("presence_penalty":0,"logit_bias":{}})",
                     Endpoint::Chat),
            "<accepted>");
  EXPECT_EQ(param_of(R"({"prompt":"a","presence_penalty":0.5})"), "presence_penalty");
  EXPECT_EQ(param_of(R"({"prompt":"a","frequency_penalty":-1})"), "frequency_penalty");
  EXPECT_EQ(param_of(R"({"prompt":"a","frequency_penalty":"0"})"), "frequency_penalty");
  EXPECT_EQ(param_of(R"({"prompt":"a","logit_bias":{"50":100}})"), "logit_bias");
  EXPECT_EQ(param_of(R"({"prompt":"a","logit_bias":[1]})"), "logit_bias");
  EXPECT_EQ(param_of(R"({"prompt":"a","best_of":2})"), "best_of");
  EXPECT_EQ(param_of(R"({"prompt":"a","suffix":"end"})"), "suffix");
  EXPECT_EQ(param_of(chat + R"("tools":[{"type":"function","function":{"name":"f"}}]})", Endpoint::Chat), "tools");
  EXPECT_EQ(param_of(chat + R"("tool_choice":"required"})", Endpoint::Chat), "tool_choice");
  EXPECT_EQ(param_of(chat + R"("functions":[{"name":"f"}]})", Endpoint::Chat), "functions");
  EXPECT_EQ(param_of(chat + R"("response_format":{"type":"json_object"}})", Endpoint::Chat), "response_format");
  try {
    parse_request(R"({"prompt":"a","logit_bias":{"50":100}})", Endpoint::Completions);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_STREQ(e.what(), "'logit_bias': not supported (only {})");
  }
}

TEST(OpenAiRequest, ContextRuleNamesTheNumbers) {
  auto r = parse_request(R"({"prompt":"a","max_tokens":10})", Endpoint::Completions);
  EXPECT_EQ(token_budget(r, 91, 100), 10);  // 91 + 10 - 1 = 100: fits
  try {
    token_budget(r, 92, 100);
    FAIL() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "max_tokens");
    EXPECT_NE(std::string(e.what()).find("prompt (92 tokens) + max_tokens 10 - 1 = 101 exceed the context of 100 tokens"),
              std::string::npos)
        << e.what();
    // OpenAI's code for it (it was null): clients branch on it to trim a conversation.
    EXPECT_EQ(e.to_json()["error"]["code"], "context_length_exceeded");
  }
  try {
    token_budget(r, 101, 100);
    FAIL() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "prompt");
    EXPECT_EQ(e.to_json()["error"]["code"], "context_length_exceeded");
  }
}

// OpenAI refuses stream_options on a whole answer ("only allowed when 'stream' is
// enabled"); it was accepted and include_usage silently did nothing.
TEST(OpenAiRequest, StreamOptionsNeedStream) {
  EXPECT_EQ(param_of(R"({"prompt":"a","stream_options":{"include_usage":true}})"), "stream_options");
  EXPECT_EQ(param_of(R"({"prompt":"a","stream":false,"stream_options":{"include_usage":true}})"), "stream_options");
  EXPECT_TRUE(parse_request(R"({"prompt":"a","stream":true,"stream_options":{"include_usage":true}})",
                            Endpoint::Completions)
                  .include_usage);
  EXPECT_FALSE(parse_request(R"({"prompt":"a","stream_options":null})", Endpoint::Completions).include_usage);
}

TEST(OpenAiErrors, ShapeIsOpenAis) {
  const auto j = error_body(401, "bad key");
  EXPECT_EQ(j["error"]["message"], "bad key");
  EXPECT_EQ(j["error"]["type"], "authentication_error");
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["code"], "invalid_api_key");
  EXPECT_EQ(error_body(400, "x", "max_tokens")["error"]["param"], "max_tokens");
  EXPECT_EQ(error_body(429, "x")["error"]["type"], "rate_limit_error");
}

TEST(Metrics, PrometheusTextHasEveryFamily) {
  Metrics m;
  m.request("/v1/completions", 200);
  m.request("/v1/completions", 200);
  m.request("other", 404);
  m.prompt_tokens(5);
  m.generated_tokens(7);
  m.time_to_first_token(0.02);
  m.inter_token_latency(0.003);
  m.set_load(2, 1, 2, 4);
  const std::string t = m.render();
  EXPECT_NE(t.find("llmport_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("llmport_requests_total{endpoint=\"other\",status=\"404\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("llmport_prompt_tokens_total 5\n"), std::string::npos);
  EXPECT_NE(t.find("llmport_generated_tokens_total 7\n"), std::string::npos);
  EXPECT_NE(t.find("llmport_time_to_first_token_seconds_bucket{le=\"0.025\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("llmport_time_to_first_token_seconds_bucket{le=\"0.01\"} 0\n"), std::string::npos);
  EXPECT_NE(t.find("llmport_inter_token_latency_seconds_count 1\n"), std::string::npos);
  EXPECT_NE(t.find("llmport_requests_active 2\n"), std::string::npos);
  EXPECT_NE(t.find("llmport_requests_queued 1\n"), std::string::npos);
  EXPECT_NE(t.find("llmport_kv_cache_slots_in_use 2\n"), std::string::npos);
  EXPECT_NE(t.find("# TYPE llmport_inter_token_latency_seconds histogram\n"), std::string::npos);
}

}  // namespace
}  // namespace llmport::serve
