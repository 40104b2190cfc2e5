// `llmport serve`'s connection pool (src/serve/connection_pool.cpp) over raw loopback
// sockets. One thread serves one connection (cpp-httplib's model), and httplib's ThreadPool
// queued a connection that found every thread taken for as long as they stayed taken: a
// handful of clients that connect and say nothing, trickle a request head within
// --read-timeout, or sit idle on keep-alive held every thread, and a well-behaved request
// waited behind them (measured before the fix: with 4 threads, 12 such clients and
// --read-timeout 30, the completion below was not answered within 30 s).
#include <fmt/format.h>

#include "serve/serve_test_util.hpp"

namespace llmport::test {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string body_of(const std::string& response) {
  const auto p = response.find("\r\n\r\n");
  return p == std::string::npos ? "" : response.substr(p + 4);
}

// 4 connection threads, 12 clients holding connections in every waiting way: 4 connected and
// silent, 4 part-way through a request head (with --read-timeout 30 nothing times out), 4
// idle on keep-alive after a /health. A golden completion sent at once is answered within 3 s
// (the pool ends connections that waited on their clients >= 250 ms; the first ones in line
// take the threads in turn), with the golden text.
TEST(ServeConnectionPool, SilentSlowAndIdleClientsDoNotHoldBackARequest) {
  ServerProcess server({stories(), "--parallel", "1", "--queue", "0", "--threads", "1", "--max-connections", "4",
                        "--read-timeout", "30"});
  ASSERT_TRUE(server.wait_ready()) << server.stderr_text();
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) held.push_back(raw_connect_send(server.port(), ""));
  for (int i = 0; i < 4; ++i)
    held.push_back(raw_connect_send(server.port(), "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  for (int i = 0; i < 4; ++i) {
    const int fd = raw_connect_send(server.port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    held.push_back(fd);
    EXPECT_NE(read_until(fd, "{\"status\":\"ok\"}", 5).find("200 OK"), std::string::npos);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // every one waited > 250 ms

  const auto c = golden_case(0);
  const std::string body =
      json({{"prompt", c.at("prompt")}, {"max_tokens", c.at("n_steps")}, {"temperature", 0}}).dump();
  const auto t0 = Clock::now();
  const int fd = raw_connect_send(server.port(), post_request("/v1/completions", body));
  const std::string got = read_until(fd, "\"total_tokens\"", 10);
  const double took = seconds_since(t0);
  close(fd);
  for (int h : held) close(h);
  ASSERT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << "after " << took << " s: '" << got << "'";
  EXPECT_LT(took, 3.0);
  const auto j = json::parse(body_of(got), nullptr, false);
  ASSERT_TRUE(j.is_object()) << got;
  EXPECT_EQ(j["choices"][0]["text"], c.at("completion_text"));
  EXPECT_EQ(j["usage"]["completion_tokens"], c.at("n_steps"));
}

// A connection is never ended while its request is answered. With the one thread streaming
// a generation, a new connection waits for a thread 1 s at most and is then answered 503 in
// OpenAI's shape with Retry-After (httplib queued it until the stream ended); the stream goes
// on to [DONE], and once it is over the next request is served.
TEST(ServeConnectionPool, WhenEveryThreadAnswersARequestANewConnectionGets503) {
  ServerProcess server({stories(), "--parallel", "1", "--queue", "0", "--threads", "1", "--max-connections", "1",
                        "--test-step-delay-ms", "100"});
  ASSERT_TRUE(server.wait_ready()) << server.stderr_text();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // wait_ready's connections closed
  const std::string stream_body =
      json({{"prompt", "Once upon a time"}, {"max_tokens", 25}, {"temperature", 0}, {"stream", true}}).dump();
  const int streaming = raw_connect_send(server.port(), post_request("/v1/completions", stream_body));
  std::string streamed = read_until(streaming, "data: ", 5);
  ASSERT_EQ(streamed.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << streamed;

  const auto t0 = Clock::now();
  const auto refused = exchange(server.port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", false, 5);
  const double took = seconds_since(t0);
  EXPECT_EQ(refused.bytes.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << refused.bytes;
  EXPECT_NE(refused.bytes.find("\r\nRetry-After: 1\r\n"), std::string::npos) << refused.bytes;
  EXPECT_NE(refused.bytes.find("\r\nConnection: close\r\n"), std::string::npos) << refused.bytes;
  const json want = {{"error",
                      {{"message", "the server is at its limit of 1 connections answering requests; retry later"},
                       {"type", "server_error"},
                       {"param", nullptr},
                       {"code", "unavailable"}}}};
  EXPECT_EQ(json::parse(body_of(refused.bytes), nullptr, false), want) << refused.bytes;
  EXPECT_TRUE(refused.ended);
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 2.0);

  streamed += read_until(streaming, "data: [DONE]", 10);
  close(streaming);
  EXPECT_EQ(count_of(streamed, "\"finish_reason\":null"), 25u) << streamed;
  EXPECT_NE(streamed.find("data: [DONE]"), std::string::npos) << streamed;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(curl("GET", server.url("/health")).status, 200);
}

}  // namespace
}  // namespace llmport::test
