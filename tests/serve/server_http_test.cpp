// `llmport serve` end to end on loopback with curl: stories260K golden greedy completions
// (whole and streamed), stop strings, logprobs, every error status, 8 concurrent clients
// getting their solo outputs with bit-identical logprobs, cancellation on disconnect,
// backpressure (429), and SIGTERM draining.
#include <fstream>
#include <future>
#include <regex>
#include <set>

#include "serve/serve_test_util.hpp"

namespace llmport::test {
namespace {

using json = nlohmann::json;

json golden() {
  std::ifstream f(shared_path("models/stories260K/golden/public.json"));
  return json::parse(f);
}

json completion_request(const json& c, bool stream = false) {
  json r = {{"prompt", c.at("prompt")}, {"max_tokens", c.at("n_steps")}, {"temperature", 0}};
  if (stream) {
    r["stream"] = true;
    r["stream_options"] = {{"include_usage", true}};
  }
  return r;
}

// One stories260K server for the suite: 8 slots.
class ServeStories : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({stories(), "--parallel", "8", "--ctx-size", "4096", "--threads", "2",
                                 "--model-name", "stories"});
    ASSERT_GT(server_->port(), 0) << server_->first_line() << server_->stderr_text();
    ASSERT_TRUE(server_->wait_ready()) << server_->stderr_text();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static HttpResult post(const std::string& path, const json& body, const std::vector<std::string>& headers = {}) {
    return curl("POST", server_->url(path), body.dump(), headers);
  }
  static ServerProcess* server_;
};
ServerProcess* ServeStories::server_ = nullptr;

TEST_F(ServeStories, ListeningLineHealthAndModels) {
  EXPECT_EQ(server_->first_line(), "listening on http://127.0.0.1:" + std::to_string(server_->port()));
  const auto h = curl("GET", server_->url("/health"));
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(json::parse(h.body), json({{"status", "ok"}}));
  const auto m = json::parse(curl("GET", server_->url("/v1/models")).body);
  EXPECT_EQ(m["object"], "list");
  ASSERT_EQ(m["data"].size(), 1u);
  EXPECT_EQ(m["data"][0]["id"], "stories");
  EXPECT_EQ(m["data"][0]["object"], "model");
  // Retrieve (the SDKs' models.retrieve): the served model, else 404 model_not_found.
  const auto one = curl("GET", server_->url("/v1/models/stories"));
  EXPECT_EQ(one.status, 200);
  EXPECT_EQ(json::parse(one.body), m["data"][0]);
  const auto other = curl("GET", server_->url("/v1/models/gpt-4o"));
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(json::parse(other.body),
            json({{"error",
                   {{"message", "the model 'gpt-4o' does not exist (this server serves 'stories')"},
                    {"type", "invalid_request_error"},
                    {"param", "model"},
                    {"code", "model_not_found"}}}}));
  const auto post_one = curl("POST", server_->url("/v1/models/stories"), "{}");
  EXPECT_EQ(post_one.status, 405);
  EXPECT_NE(post_one.headers.find("Allow: GET"), std::string::npos) << post_one.headers;
}

TEST_F(ServeStories, GreedyCompletionIsTheGoldenTextForEveryPrompt) {
  const json g = golden();  // a range-for over golden().at(...) would outlive the temporary
  std::set<std::string> ids;
  for (const auto& c : g.at("cases")) {
    SCOPED_TRACE(c.at("prompt").get<std::string>());
    const auto r = post("/v1/completions", completion_request(c));
    ASSERT_EQ(r.status, 200) << r.body;
    const auto j = json::parse(r.body);
    EXPECT_EQ(j["object"], "text_completion");
    EXPECT_EQ(j["model"], "stories");
    EXPECT_TRUE(std::regex_match(j["id"].get<std::string>(), std::regex("cmpl-[0-9a-f]{24}"))) << j["id"];
    EXPECT_TRUE(ids.insert(j["id"].get<std::string>()).second) << j["id"];  // never one id for two responses
    EXPECT_TRUE(j["created"].is_number_integer());
    EXPECT_EQ(j["choices"][0]["index"], 0);
    EXPECT_EQ(j["choices"][0]["text"], c.at("completion_text"));
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
    const int n_prompt = static_cast<int>(c.at("prompt_ids").size());
    EXPECT_EQ(j["usage"]["prompt_tokens"], n_prompt);
    EXPECT_EQ(j["usage"]["completion_tokens"], 32);
    EXPECT_EQ(j["usage"]["total_tokens"], n_prompt + 32);
  }
}

TEST_F(ServeStories, PromptAsTokenIdsGivesTheSameText) {
  const auto c = golden().at("cases").at(1);
  const auto r = post("/v1/completions", {{"prompt", c.at("prompt_ids")}, {"max_tokens", 32}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], c.at("completion_text"));
}

TEST_F(ServeStories, StreamedCompletionIsOneEventPerTokenThenFinishUsageDone) {
  const auto c = golden().at("cases").at(0);
  const auto r = post("/v1/completions", completion_request(c, /*stream=*/true));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.headers.find("text/event-stream"), std::string::npos) << r.headers;
  const auto ev = sse_payloads(r.body);
  ASSERT_EQ(ev.size(), 32u + 3u) << r.body;  // 32 tokens, finish, usage, [DONE]
  std::string text;
  for (std::size_t i = 0; i < 32; ++i) {
    const auto j = json::parse(ev[i]);
    EXPECT_EQ(j["object"], "text_completion");
    EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
    text += j["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, c.at("completion_text"));
  const auto fin = json::parse(ev[32]);
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "length");
  const auto usage = json::parse(ev[33]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 32);
  EXPECT_EQ(ev[34], "[DONE]");
}

TEST_F(ServeStories, StopStringEndsTheTextBeforeItWholeAndStreamed) {
  const auto c = golden().at("cases").at(0);  // ", there was a little girl named Lily. ..."
  const std::string full = c.at("completion_text");
  json req = completion_request(c);
  req["stop"] = json::array({"named", "zzz"});
  const auto r = post("/v1/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = json::parse(r.body);
  EXPECT_EQ(j["choices"][0]["text"], full.substr(0, full.find("named")));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  req["stream"] = true;
  const auto s = post("/v1/completions", req);
  std::string text, reason;
  for (const auto& e : sse_payloads(s.body)) {
    if (e == "[DONE]") continue;
    const auto k = json::parse(e);
    text += k["choices"][0]["text"].get<std::string>();
    if (!k["choices"][0]["finish_reason"].is_null()) reason = k["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, full.substr(0, full.find("named")));
  EXPECT_EQ(reason, "stop");
}

// The logprobs' tokens join to the text a stop string cut, whole and streamed: a token
// the stop string starts inside keeps the part before it, and the tokens after the cut
// (the stop string's own, held back while it matched) are not listed. usage still counts
// every token generated (computed: it was).
TEST_F(ServeStories, LogprobTokensJoinToTheTextAStopStringCut) {
  const auto c = golden().at("cases").at(0);  // ", there was a little girl named Lily. ..."
  const std::string full = c.at("completion_text");
  for (const std::string stop : {"re was", " there", "girl named"}) {
    SCOPED_TRACE(stop);
    json req = completion_request(c);
    req["stop"] = stop;
    req["logprobs"] = 2;
    const auto r = post("/v1/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    const auto ch = json::parse(r.body)["choices"][0];
    const std::string text = ch["text"];
    EXPECT_EQ(text, full.substr(0, full.find(stop)));
    std::string joined;
    for (std::size_t i = 0; i < ch["logprobs"]["tokens"].size(); ++i) {
      EXPECT_EQ(ch["logprobs"]["text_offset"][i], joined.size()) << i;
      joined += ch["logprobs"]["tokens"][i].get<std::string>();
    }
    EXPECT_EQ(joined, text) << ch["logprobs"].dump();
    EXPECT_EQ(ch["logprobs"]["token_logprobs"].size(), ch["logprobs"]["tokens"].size());
    req["stream"] = true;
    const auto s = post("/v1/completions", req);
    ASSERT_EQ(s.status, 200) << s.body;
    std::string streamed_text;
    json tokens = json::array(), offsets = json::array();
    for (const auto& e : sse_payloads(s.body)) {
      if (e == "[DONE]") continue;
      const auto k = json::parse(e);
      if (k["choices"].empty()) continue;
      streamed_text += k["choices"][0]["text"].get<std::string>();
      const auto& lp = k["choices"][0]["logprobs"];
      if (!lp.is_object()) continue;
      for (const auto& t : lp["tokens"]) tokens.push_back(t);
      for (const auto& o : lp["text_offset"]) offsets.push_back(o);
    }
    EXPECT_EQ(streamed_text, text);
    EXPECT_EQ(tokens, ch["logprobs"]["tokens"]);
    EXPECT_EQ(offsets, ch["logprobs"]["text_offset"]);
  }
  // " the" of " there" is the cut token above; " there" itself is dropped where it starts
  // the stop string.
  json req = completion_request(c);
  req["stop"] = "re was";
  req["logprobs"] = 1;
  EXPECT_EQ(json::parse(post("/v1/completions", req).body)["choices"][0]["logprobs"]["tokens"],
            json::array({",", " the"}));
  req["stop"] = " there";
  const auto j = json::parse(post("/v1/completions", req).body);
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"], json::array({","}));
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
}

TEST_F(ServeStories, LogprobsListTopKPerToken) {
  const auto c = golden().at("cases").at(2);
  json req = completion_request(c);
  req["max_tokens"] = 5;
  req["logprobs"] = 5;
  const auto r = post("/v1/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto lp = json::parse(r.body)["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 5u);
  ASSERT_EQ(lp["token_logprobs"].size(), 5u);
  ASSERT_EQ(lp["top_logprobs"].size(), 5u);
  ASSERT_EQ(lp["text_offset"].size(), 5u);
  EXPECT_EQ(lp["text_offset"][0], 0);
  // As OpenAI lists them: the most probable alternative first (a sorted map listed them
  // by token text), and the body's fields in OpenAI's order, id first.
  const auto ordered = nlohmann::ordered_json::parse(r.body);
  EXPECT_EQ(ordered.begin().key(), "id");
  for (const auto& alts : ordered["choices"][0]["logprobs"]["top_logprobs"]) {
    double prev = 1.0;
    for (const auto& [token, v] : alts.items()) {
      EXPECT_LE(v.get<double>(), prev) << alts.dump();
      prev = v.get<double>();
    }
  }
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_EQ(lp["top_logprobs"][i].size(), 5u);
    // Greedy: the chosen token is the best alternative.
    double best = -1e30;
    for (const auto& [k, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<double>());
    EXPECT_EQ(best, lp["token_logprobs"][i].get<double>());
  }
  // Each token is the text it adds (the golden's SentencePiece piece, its leading space
  // kept: decoded alone, "\u2581with" lost it), so the tokens join to the text at their
  // offsets, and the chosen token is among its alternatives by that text.
  const std::string text = json::parse(r.body)["choices"][0]["text"];
  std::string joined;
  for (std::size_t i = 0; i < 5; ++i) {
    std::string want = c.at("generated_tokens")[i];
    if (want.rfind("\u2581", 0) == 0) want = " " + want.substr(3);
    EXPECT_EQ(lp["tokens"][i], want) << i;
    EXPECT_EQ(lp["text_offset"][i], joined.size()) << i;
    EXPECT_TRUE(lp["top_logprobs"][i].contains(want)) << lp["top_logprobs"][i].dump();
    joined += lp["tokens"][i].get<std::string>();
  }
  EXPECT_EQ(joined, text);
  // Streamed: the same tokens, one per event.
  req["stream"] = true;
  const auto st = post("/v1/completions", req);
  ASSERT_EQ(st.status, 200) << st.body;
  std::vector<json> streamed;
  for (const auto& ev : sse_payloads(st.body)) {
    const auto j = json::parse(ev, nullptr, false);
    if (j.is_object() && j["choices"][0]["logprobs"].is_object()) streamed.push_back(j["choices"][0]["logprobs"]);
  }
  ASSERT_EQ(streamed.size(), 5u) << st.body;
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(streamed[i]["tokens"][0], lp["tokens"][i]) << i;
    EXPECT_EQ(streamed[i]["text_offset"][0], lp["text_offset"][i]) << i;
  }
  // After BOS alone the first token starts the text: its space is stripped there, as in it.
  const auto e = post("/v1/completions", {{"prompt", ""}, {"max_tokens", 3}, {"temperature", 0}, {"logprobs", 1}});
  ASSERT_EQ(e.status, 200) << e.body;
  const auto ec = json::parse(e.body)["choices"][0];
  EXPECT_EQ(ec["text"], "Once upon a");
  EXPECT_EQ(ec["logprobs"]["tokens"], json::array({"Once", " upon", " a"})) << e.body;
  EXPECT_EQ(ec["logprobs"]["text_offset"], json::array({0, 4, 9})) << e.body;
  EXPECT_TRUE(ec["logprobs"]["top_logprobs"][0].contains("Once")) << e.body;
}

TEST_F(ServeStories, ErrorStatusesInOpenAisShape) {
  auto expect_error = [](const HttpResult& r, int status, const std::string& param = "") {
    EXPECT_EQ(r.status, status) << r.body;
    const auto j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.body;
    ASSERT_TRUE(j.contains("error")) << r.body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_TRUE(j["error"]["type"].is_string());
    EXPECT_TRUE(j["error"].contains("code"));
    if (!param.empty()) {
      EXPECT_EQ(j["error"]["param"], param);
    }
  };
  const std::string url = server_->url("/v1/completions");
  expect_error(curl("POST", url, "{\"prompt\": \"a\", "), 400);
  expect_error(curl("POST", url, R"({"prompt":"a","max_tokens":"ten"})"), 400, "max_tokens");
  expect_error(curl("POST", url, R"({"prompt":"a","n":2})"), 400, "n");
  expect_error(curl("POST", url, R"({"prompt":"a","echo":true})"), 400, "echo");
  expect_error(curl("POST", url, R"({"prompt":[1,9999]})"), 400, "prompt");
  // A compressed body is named as such (it was "could not read the request body").
  const auto gz = curl("POST", url, R"({"prompt":"a"})", {"Content-Encoding: gzip"});
  expect_error(gz, 415);
  EXPECT_NE(gz.body.find("unsupported Content-Encoding 'gzip'"), std::string::npos) << gz.body;
  // Coding names are case-insensitive and the field is a list: identity passes in any case,
  // gzip behind it does not.
  EXPECT_EQ(curl("POST", url, R"({"prompt":"a","max_tokens":1})", {"Content-Encoding: Identity"}).status, 200);
  expect_error(curl("POST", url, R"({"prompt":"a"})", {"Content-Encoding: identity, gzip"}), 415);
  // 3 prompt tokens + 510 - 1 = 512 fits the 512-token slot; 511 does not.
  EXPECT_EQ(curl("POST", url, R"({"prompt":[1,403,407],"max_tokens":510,"temperature":0,"stop":"."})").status, 200);
  const auto over = curl("POST", url, R"({"prompt":[1,403,407],"max_tokens":511})");
  expect_error(over, 400, "max_tokens");
  EXPECT_NE(over.body.find("prompt (3 tokens) + max_tokens 511 - 1 = 513 exceed the context of 512 tokens"),
            std::string::npos) << over.body;
  // Chat on a model without a chat template.
  expect_error(curl("POST", server_->url("/v1/chat/completions"), R"({"messages":[{"role":"user","content":"hi"}]})"),
               400, "messages");
  // Body over 8 MiB.
  const std::string big = R"({"prompt":")" + std::string((8u << 20) + 10, 'a') + R"("})";
  expect_error(curl("POST", url, big), 413);
  expect_error(curl("GET", server_->url("/v1/nope")), 404);
  expect_error(curl("POST", server_->url("/nope"), "{}"), 404);
  const auto m = curl("GET", url);
  expect_error(m, 405);
  EXPECT_NE(m.headers.find("Allow: POST"), std::string::npos) << m.headers;
  expect_error(curl("DELETE", server_->url("/v1/models")), 405);
  // The server is still up and answering.
  EXPECT_EQ(curl("GET", server_->url("/health")).status, 200);
  const auto metrics = curl("GET", server_->url("/metrics")).body;
  EXPECT_NE(metrics.find("llmport_requests_total{endpoint=\"/v1/completions\",status=\"413\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("llmport_requests_total{endpoint=\"other\",status=\"404\"} 2"), std::string::npos);
}

TEST_F(ServeStories, EightConcurrentGreedyClientsGetTheirSoloOutputsAndLogprobs) {
  const auto cases = golden().at("cases");
  ASSERT_EQ(cases.size(), 8u);
  auto request = [&](std::size_t i) {
    json req = completion_request(cases[i]);
    req["logprobs"] = 5;
    return req;
  };
  // Alone, one after the other.
  std::vector<json> solo;
  for (std::size_t i = 0; i < 8; ++i) {
    const auto r = post("/v1/completions", request(i));
    ASSERT_EQ(r.status, 200) << r.body;
    solo.push_back(json::parse(r.body)["choices"][0]);
  }
  // All 8 at once (twice: they interleave differently each time; streams: ServeBatching).
  for (int round = 0; round < 2; ++round) {
    std::vector<std::future<HttpResult>> fs;
    for (std::size_t i = 0; i < 8; ++i)
      fs.push_back(std::async(std::launch::async, [&, i] { return post("/v1/completions", request(i)); }));
    for (std::size_t i = 0; i < 8; ++i) {
      const auto r = fs[i].get();
      ASSERT_EQ(r.status, 200) << r.body;
      const auto choice = json::parse(r.body)["choices"][0];
      EXPECT_EQ(choice["text"], cases[i].at("completion_text")) << i;
      // Bit-identical top-5 logprobs (the JSON prints every float exactly).
      EXPECT_EQ(choice["logprobs"].dump(), solo[i]["logprobs"].dump()) << i;
    }
  }
  const auto metrics = curl("GET", server_->url("/metrics")).body;
  EXPECT_EQ(metric(metrics, "llmport_kv_cache_slots_in_use"), 0) << metrics;
  EXPECT_EQ(metric(metrics, "llmport_kv_cache_slots_total"), 8);
}

// Continuous batching with streams: 8 streamed greedy clients started 15 ms apart (a step
// takes >= 5 ms here, so each joins the batch while the others decode, its prompt prefilled
// beside their next tokens: at least 4 slots were seen in use at once) get, event by event,
// their solo whole answer: the golden text, and every token with its bit-identical top-5
// logprobs at its offset; usage counts the prompt and the 32 generated tokens.
TEST(ServeBatching, EightConcurrentStreamsEachEqualTheirSoloAnswer) {
  ServerProcess server({stories(), "--parallel", "8", "--threads", "2", "--test-step-delay-ms", "5"});
  ASSERT_TRUE(server.wait_ready()) << server.stderr_text();
  auto post = [&](const json& body) { return curl("POST", server.url("/v1/completions"), body.dump()); };
  const auto cases = golden().at("cases");
  std::vector<json> solo;
  for (std::size_t i = 0; i < 8; ++i) {
    json req = completion_request(cases[i]);
    req["logprobs"] = 5;
    const auto r = post(req);
    ASSERT_EQ(r.status, 200) << r.body;
    solo.push_back(json::parse(r.body)["choices"][0]["logprobs"]);
  }
  std::vector<std::future<HttpResult>> fs;
  for (std::size_t i = 0; i < 8; ++i) {
    json req = completion_request(cases[i], /*stream=*/true);
    req["logprobs"] = 5;
    fs.push_back(std::async(std::launch::async, [req, &post] { return post(req); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
  }
  double most_in_use = 0;
  while (fs.back().wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
    most_in_use = std::max(most_in_use, metric(curl("GET", server.url("/metrics")).body, "llmport_kv_cache_slots_in_use"));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(most_in_use, 4);
  for (std::size_t i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    const auto r = fs[i].get();
    ASSERT_EQ(r.status, 200) << r.body;
    std::string text;
    json tokens = json::array(), offsets = json::array(), lps = json::array(), tops = json::array();
    json usage;
    for (const auto& ev : sse_payloads(r.body)) {
      if (ev == "[DONE]") continue;
      const auto j = json::parse(ev);
      if (j.contains("usage")) usage = j["usage"];
      if (j["choices"].empty()) continue;
      const auto& ch = j["choices"][0];
      text += ch["text"].get<std::string>();
      if (!ch["logprobs"].is_object()) continue;
      tokens.push_back(ch["logprobs"]["tokens"][0]);
      offsets.push_back(ch["logprobs"]["text_offset"][0]);
      lps.push_back(ch["logprobs"]["token_logprobs"][0]);
      tops.push_back(ch["logprobs"]["top_logprobs"][0]);
    }
    EXPECT_EQ(text, cases[i].at("completion_text"));
    EXPECT_EQ(tokens, solo[i]["tokens"]);
    EXPECT_EQ(offsets, solo[i]["text_offset"]);
    EXPECT_EQ(lps.dump(), solo[i]["token_logprobs"].dump());
    EXPECT_EQ(tops.dump(), solo[i]["top_logprobs"].dump());
    EXPECT_EQ(usage["prompt_tokens"], cases[i].at("prompt_ids").size());
    EXPECT_EQ(usage["completion_tokens"], cases[i].at("n_steps"));
    EXPECT_EQ(usage["total_tokens"], cases[i].at("prompt_ids").size() + cases[i].at("n_steps").get<std::size_t>());
  }
  EXPECT_TRUE(wait_metric(server, "llmport_kv_cache_slots_in_use", 0));
}

// A slow server (test-only step delay) for cancellation, backpressure and draining.
TEST(ServeSlow, DisconnectCancelsAndFreesTheSlotQueueFullIs429SigtermDrains) {
  ServerProcess s({stories(), "--parallel", "1", "--queue", "1", "--ctx-size", "512", "--threads", "1",
                   "--test-step-delay-ms", "20", "--shutdown-grace", "5"});
  ASSERT_GT(s.port(), 0) << s.stderr_text();
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":400,"temperature":0,"stream":true})";
  // A client that reads one event and hangs up.
  const int fd = raw_connect_send(s.port(), post_request("/v1/completions", body));
  ASSERT_GE(fd, 0);
  const std::string first = read_until(fd, "data: ", 10);
  ASSERT_NE(first.find("data: "), std::string::npos) << first;
  close(fd);
  // Its request ends and its slot is free again within a bounded time, long before 400
  // tokens x 20 ms. (The slot gauge alone reads 0 before the scheduler has taken the
  // request too, so the wait is for the request's end first.)
  // Counted as the client's hang-up (499, as a whole answer's), not as the 200 its status line said.
  EXPECT_TRUE(wait_metric(s, R"(llmport_requests_total{endpoint="/v1/completions",status="499"})", 1));
  EXPECT_TRUE(wait_metric(s, "llmport_kv_cache_slots_in_use", 0));
  const double generated = metric(curl("GET", s.url("/metrics")).body, "llmport_generated_tokens_total");
  EXPECT_LT(generated, 200);
  EXPECT_GE(generated, 1);

  // Backpressure: one running + one queued; the third is 429 with Retry-After.
  const std::string slow = R"({"prompt":"Once upon a time","max_tokens":60,"temperature":0})";
  // Each step waits for the server to report the previous request (a fixed sleep raced a
  // loaded machine, where curl may not have connected yet).
  auto a = std::async(std::launch::async, [&] { return curl("POST", s.url("/v1/completions"), slow); });
  ASSERT_TRUE(wait_metric(s, "llmport_requests_active", 1)) << s.stderr_text();
  auto b = std::async(std::launch::async, [&] { return curl("POST", s.url("/v1/completions"), slow); });
  ASSERT_TRUE(wait_metric(s, "llmport_requests_queued", 1)) << s.stderr_text();
  const auto c = curl("POST", s.url("/v1/completions"), slow);
  EXPECT_EQ(c.status, 429) << c.body;
  EXPECT_NE(c.headers.find("Retry-After: 1"), std::string::npos) << c.headers;
  EXPECT_EQ(json::parse(c.body)["error"]["type"], "rate_limit_error");
  EXPECT_EQ(a.get().status, 200);
  EXPECT_EQ(b.get().status, 200);

  // SIGTERM with a request in flight: it still completes, then the server exits 0.
  // (The gauges may still show b for one scheduler step; the prompt counter moves only when
  // the scheduler takes the new request.)
  const double prompts = metric(curl("GET", s.url("/metrics")).body, "llmport_prompt_tokens_total");
  auto inflight = std::async(std::launch::async, [&] {
    return curl("POST", s.url("/v1/completions"), R"({"prompt":"Once upon a time","max_tokens":30,"temperature":0})");
  });
  ASSERT_TRUE(wait_metric(s, "llmport_prompt_tokens_total", prompts, true)) << s.stderr_text();
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 20), 0) << s.stderr_text();
  const auto done = inflight.get();
  EXPECT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(json::parse(done.body)["usage"]["completion_tokens"], 30);
}

// A whole answer still running when the shutdown grace ends is a 503 in OpenAI's shape that
// closes its connection (it said Keep-Alive: a client would reuse a connection the server
// is about to drop).
TEST(ServeSlow, AnAnswerCutByTheEndOfTheGraceIs503AndClosesItsConnection) {
  ServerProcess s({stories(), "--parallel", "1", "--ctx-size", "512", "--threads", "1", "--test-step-delay-ms", "20",
                   "--shutdown-grace", "1"});
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  auto cut = std::async(std::launch::async, [&] {
    return curl("POST", s.url("/v1/completions"), R"({"prompt":"Once upon a time","max_tokens":450,"temperature":0})");
  });
  ASSERT_TRUE(wait_metric(s, "llmport_requests_active", 1)) << s.stderr_text();
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 20), 0) << s.stderr_text();
  const auto r = cut.get();
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["message"], "the server is shutting down");
  EXPECT_NE(r.headers.find("Connection: close"), std::string::npos) << r.headers;
  EXPECT_EQ(r.headers.find("Keep-Alive"), std::string::npos) << r.headers;
}

// A model without a tokenizer (qwen3-tiny: tokenizer_config.json only) serves token ids;
// text prompts and stop strings (matched on decoded text) are 400s naming the field: a stop
// that could never match was once taken silently (session-36 serve round).
TEST(ServeSlow, AModelWithoutATokenizerRefusesTextAndStopStrings) {
  ServerProcess s({shared_path("models/synthetic/qwen3-tiny").string(), "--ctx-size", "64", "--threads", "1"});
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  const std::string url = s.url("/v1/completions");
  const auto ok = curl("POST", url, R"({"prompt":[1,2,3],"max_tokens":2,"temperature":0})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(json::parse(ok.body)["usage"]["completion_tokens"], 2);
  for (const auto& [body, param] : std::vector<std::pair<std::string, std::string>>{
           {R"({"prompt":[1,2,3],"max_tokens":2,"stop":["a"]})", "stop"},
           {R"({"prompt":[1,2,3],"max_tokens":2,"stop":"a"})", "stop"},
           {R"({"prompt":"hello","max_tokens":2})", "prompt"}}) {
    const auto r = curl("POST", url, body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["param"], param) << r.body;
    EXPECT_NE(json::parse(r.body)["error"]["message"].get<std::string>().find("no tokenizer"), std::string::npos)
        << r.body;
  }
}

// A collapsed forward pass (a weight whose square overflows fp32: every logit 0) is a 500
// naming the cause, as `llmport run` fails on it, not 200 with id 0 over and over.
TEST(ServeSlow, DegenerateLogitsAreAGenerationFailure) {
  TempDir t;
  copy_stories(t.path());
  edit_f32_tensor(t.path() / "model.safetensors", "model.layers.0.mlp.down_proj.weight", [](float& v, std::size_t i) {
    if (i == 0) v = 1e30f;
  });
  ServerProcess s({t.path().string(), "--ctx-size", "64", "--threads", "1"});
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  const auto r = curl("POST", s.url("/v1/completions"), R"({"prompt":"Once upon a time","max_tokens":4})");
  EXPECT_EQ(r.status, 500) << r.body;
  EXPECT_NE(r.body.find("generation failed: degenerate logits at step 0"), std::string::npos) << r.body;
}

// Shutdown answers a request still queued for a slot at once (it waited out the whole grace
// for a 503), and a second SIGTERM ends the grace (Ctrl-C twice waited up to
// --shutdown-grace); found by the session-36 serve round.
TEST(ServeSlow, ShutdownAnswersTheQueueAtOnceAndASecondSignalEndsTheGrace) {
  ServerProcess s({stories(), "--parallel", "1", "--queue", "1", "--ctx-size", "512", "--threads", "1",
                   "--test-step-delay-ms", "20", "--shutdown-grace", "60"});
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  const std::string slow = R"({"prompt":"Once upon a time","max_tokens":450,"temperature":0})";
  auto running = std::async(std::launch::async, [&] { return curl("POST", s.url("/v1/completions"), slow); });
  ASSERT_TRUE(wait_metric(s, "llmport_requests_active", 1)) << s.stderr_text();
  auto queued = std::async(std::launch::async, [&] { return curl("POST", s.url("/v1/completions"), slow); });
  ASSERT_TRUE(wait_metric(s, "llmport_requests_queued", 1)) << s.stderr_text();
  const auto t0 = std::chrono::steady_clock::now();
  kill(s.pid(), SIGTERM);
  const auto q = queued.get();
  EXPECT_EQ(q.status, 503) << q.body;
  EXPECT_EQ(json::parse(q.body)["error"]["message"], "the server is shutting down");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 10), 0) << s.stderr_text();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));  // not the 60 s grace
  EXPECT_EQ(running.get().status, 503);
  EXPECT_NE(s.stderr_text().find("second signal: cancelling what is left"), std::string::npos) << s.stderr_text();
}

// A streamed request whose client hangs up while it is still queued gives its queue place
// back: nothing was written to it while it waited, so the close went unseen and the next
// client got a 429 until the queued stream had run (the whole-answer path looked at the
// socket every 100 ms; the streamed one now does too).
TEST(ServeSlow, AQueuedStreamWhoseClientHangsUpLeavesTheQueue) {
  ServerProcess s({stories(), "--parallel", "1", "--queue", "1", "--ctx-size", "512", "--threads", "1",
                   "--test-step-delay-ms", "20"});
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  const std::string slow = R"({"prompt":"Once upon a time","max_tokens":450,"temperature":0})";
  auto running = std::async(std::launch::async, [&] { return curl("POST", s.url("/v1/completions"), slow); });
  ASSERT_TRUE(wait_metric(s, "llmport_requests_active", 1)) << s.stderr_text();
  // (/v1/chat/completions streams through the same provider; stories260K has no template.)
  const int fd = raw_connect_send(s.port(), post_request("/v1/completions", R"({"prompt":"Once","max_tokens":50,"stream":true})"));
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(wait_metric(s, "llmport_requests_queued", 1)) << s.stderr_text();
  const auto t0 = std::chrono::steady_clock::now();
  close(fd);
  // Back to 0 long before the running request's 450 x 20 ms end.
  EXPECT_TRUE(wait_metric(s, "llmport_requests_queued", 0)) << s.stderr_text();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.5);
  EXPECT_EQ(metric(curl("GET", s.url("/metrics")).body, "llmport_requests_active"), 1) << "the running one ended";
  // The queue place is there for the next client.
  const auto next = curl("POST", s.url("/v1/completions"), R"({"prompt":"Once","max_tokens":2,"temperature":0})");
  EXPECT_EQ(next.status, 200) << next.body;
  EXPECT_TRUE(wait_metric(s, R"(llmport_requests_total{endpoint="/v1/completions",status="499"})", 1))
      << curl("GET", s.url("/metrics")).body;  // the hung-up stream, not a 200
  EXPECT_EQ(running.get().status, 200);
}

TEST(ServeAuth, ApiKeyIsRequiredOnV1Only) {
  ServerProcess s({stories(), "--parallel", "1", "--threads", "1", "--api-key", "sekret"});
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  const std::string body = R"({"prompt":"Once","max_tokens":2,"temperature":0})";
  const auto none = curl("POST", s.url("/v1/completions"), body);
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(json::parse(none.body)["error"]["code"], "invalid_api_key");
  EXPECT_EQ(curl("POST", s.url("/v1/completions"), body, {"Authorization: Bearer wrong"}).status, 401);
  EXPECT_EQ(curl("GET", s.url("/v1/models")).status, 401);
  EXPECT_EQ(curl("POST", s.url("/v1/completions"), body, {"Authorization: Bearer sekret"}).status, 200);
  EXPECT_EQ(curl("GET", s.url("/health")).status, 200);
  EXPECT_EQ(s.signal_and_wait(SIGINT, 20), 0);
}

// Two Authorization headers were authorized by the first (httplib's reading): "Bearer sekret"
// then "Bearer wrong" got 200, the reverse 401, so a proxy checking the last one disagreed.
// Either order is now a 400 in OpenAI's error shape, before the key is looked at. And the
// scheme is case-insensitive (RFC 9110 11.1): "bearer sekret" was a 401.
TEST(ServeAuth, DuplicateAuthorizationIs400AndTheSchemeIsCaseInsensitive) {
  ServerProcess s({stories(), "--parallel", "1", "--threads", "1", "--api-key", "sekret"});
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  const std::string body = R"({"prompt":"Once","max_tokens":2,"temperature":0})";
  for (const auto& pair : {std::vector<std::string>{"Authorization: Bearer sekret", "Authorization: Bearer wrong"},
                           std::vector<std::string>{"Authorization: Bearer wrong", "Authorization: Bearer sekret"},
                           std::vector<std::string>{"Authorization: Bearer sekret", "Authorization: Bearer sekret"}}) {
    SCOPED_TRACE(pair[0] + " / " + pair[1]);
    const auto r = curl("POST", s.url("/v1/completions"), body, pair);
    EXPECT_EQ(r.status, 400) << r.headers << r.body;
    const json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error") << r.body;
    EXPECT_TRUE(j["error"].contains("param") && j["error"].contains("code")) << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find("more than one Authorization header"), std::string::npos)
        << r.body;
  }
  // The same on a GET without a body, sent byte for byte (no client merging the lines).
  const std::string raw = exchange(s.port(), "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                                             "sekret\r\nAuthorization: Bearer wrong\r\nConnection: close\r\n\r\n")
                              .bytes;
  EXPECT_EQ(raw.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << raw;

  for (const std::string scheme : {"bearer", "BEARER", "bEaReR"}) {
    SCOPED_TRACE(scheme);
    EXPECT_EQ(curl("POST", s.url("/v1/completions"), body, {"Authorization: " + scheme + " sekret"}).status, 200);
  }
  EXPECT_EQ(curl("GET", s.url("/v1/models"), "", {"Authorization: Bearer  sekret"}).status, 200);  // 1*SP
  // Only the scheme is case-insensitive: the key, a missing separator or another scheme is not.
  for (const std::string v : {"Bearer SEKRET", "Bearersekret", "Basic sekret", "bearer", "Bearer sekret2"}) {
    SCOPED_TRACE(v);
    const auto r = curl("GET", s.url("/v1/models"), "", {"Authorization: " + v});
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["code"], "invalid_api_key");
  }
  EXPECT_EQ(s.signal_and_wait(SIGINT, 20), 0);
}

// --ctx-size / --parallel above the model's context: each slot holds the model's context,
// and the server says so (stories260K: max_position_embeddings 512) instead of clamping
// silently.
TEST(ServeCli, SlotContextAboveTheModelsIsCappedWithAWarning) {
  ServerProcess s({stories(), "--parallel", "1", "--ctx-size", "4096", "--threads", "1"});
  ASSERT_GT(s.port(), 0) << s.stderr_text();
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  EXPECT_NE(s.stderr_text().find("warning: --ctx-size 4096 over --parallel 1 is 4096 tokens per slot, above the "
                                 "model's context of 512: each slot holds 512 tokens"),
            std::string::npos)
      << s.stderr_text();
  EXPECT_NE(s.stderr_text().find("(1 slot x 512 tokens"), std::string::npos) << s.stderr_text();
  EXPECT_EQ(s.signal_and_wait(SIGINT, 20), 0);
}

// The listening line is a URL scripts read: an IPv6 literal is bracketed (RFC 3986 3.2.2;
// it printed "http://::1:PORT"), and the server answers there.
TEST(ServeCli, AnIpv6HostIsBracketedInTheListeningUrl) {
  if (read_file("/proc/sys/net/ipv6/conf/lo/disable_ipv6").rfind("0", 0) != 0)
    GTEST_SKIP() << "no IPv6 loopback on this machine";
  ServerProcess s({stories(), "--host", "::1", "--parallel", "1", "--threads", "1"});
  ASSERT_GT(s.port(), 0) << s.first_line() << s.stderr_text();
  EXPECT_EQ(s.first_line(), "listening on http://[::1]:" + std::to_string(s.port()));
  HttpResult h;
  for (int i = 0; i < 600 && h.status != 200; ++i) {
    h = curl("GET", "http://[::1]:" + std::to_string(s.port()) + "/health", "", {}, 5);
    if (h.status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(h.status, 200) << s.stderr_text();
  EXPECT_EQ(s.signal_and_wait(SIGINT, 20), 0);
}

TEST(ServeCli, BadOptionsAreOneLineErrorsWithExit2) {
  auto r = run_llmport({"serve", stories(), "--parallel", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  r = run_llmport({"serve", stories(), "--ctx-size", "4", "--parallel", "4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ctx-size 4 over --parallel 4 leaves 1 tokens per slot"), std::string::npos) << r.err;
  r = run_llmport({"serve", stories(), "--parallel", "2", "--queue", "3", "--max-connections", "4", "--port", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: --max-connections 4 is below --parallel + --queue (5): admitted requests need their "
                   "connections\n") << r.err;
  // Weights + KV beyond the available memory: stories260K's config with a 100M-token
  // context, all of it asked for (5 layers x 4 kv heads x 8 dims x 2 x 4 bytes = 1280 bytes
  // per token: 128 GB).
  TempDir d;
  auto cfg = json::parse(read_file(shared_path("models/stories260K/config.json")));
  cfg["max_position_embeddings"] = 100000000;
  write_file(d.path() / "config.json", cfg.dump());
  r = run_llmport({"serve", d.path().string(), "--ctx-size", "100000000", "--parallel", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("exceed the available memory"), std::string::npos) << r.err;
  r = run_llmport({"serve", "/nonexistent/model"});
  EXPECT_EQ(r.exit_code, 2);
  // An empty --api-key (an unset "$KEY") must not serve without authentication.
  r = run_llmport({"serve", stories(), "--api-key", ""});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: --api-key: empty key (omit the flag to serve without authentication) (see llmport serve --help)\n");
}

}  // namespace
}  // namespace llmport::test
