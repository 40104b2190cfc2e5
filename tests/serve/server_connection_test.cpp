// `llmport serve`'s connection layer (src/serve/http_connection.cpp) over raw loopback
// sockets: what cpp-httplib 0.11's own loop got wrong. An empty Transfer-Encoding (dropped by
// httplib: read as a body-less request); a client that half-closes after its request (`nc
// -N`: httplib's writes failed on the peer's FIN, so it got nothing); a request that stalls
// (httplib closed without a word, or after a 400, at its read timeout: 408 now); header
// lines or sections over the limit (400: 431 now); the 414 message; and a refusal marked
// "Connection: close" whose connection stayed open, so the unread body's bytes were served
// as a next request. Every error is checked field for field in OpenAI's shape.
#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "serve/serve_test_util.hpp"

namespace llmport::test {
namespace {

using json = nlohmann::json;

const std::string kPostHead =
    "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";

// `got` is exactly one response, `status_line`, with "Connection: close" and the OpenAI
// error {"message": message, "type": "invalid_request_error", "param": null, "code": code},
// and the server ended the connection after it.
void expect_one_error_then_end(const Received& got, const std::string& status_line, const std::string& message,
                               const json& code = nullptr) {
  EXPECT_EQ(got.bytes.rfind("HTTP/1.1 " + status_line + "\r\n", 0), 0u) << got.bytes;
  EXPECT_EQ(count_of(got.bytes, "HTTP/1.1 "), 1u) << got.bytes;
  const auto head_end = got.bytes.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << got.bytes;
  EXPECT_NE(got.bytes.substr(0, head_end).find("\r\nConnection: close\r\n"), std::string::npos) << got.bytes;
  const json want = {{"error", {{"message", message}, {"type", "invalid_request_error"}, {"param", nullptr},
                                {"code", code}}}};
  EXPECT_EQ(json::parse(got.bytes.substr(head_end + 4), nullptr, false), want) << got.bytes;
  EXPECT_TRUE(got.ended) << "the connection stayed open after: " << got.bytes;
}

class ServeConnection : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // 10 ms per engine step: a 32-token answer takes ~0.3 s, past the handler's first look
    // at its client (100 ms), so a half-closed client's FIN is seen during the generation.
    server_ = new ServerProcess({stories(), "--parallel", "2", "--threads", "1", "--read-timeout", "1",
                                 "--test-step-delay-ms", "10"});
    ASSERT_TRUE(server_->wait_ready()) << server_->stderr_text();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }
  static ServerProcess* server_;
};
ServerProcess* ServeConnection::server_ = nullptr;

// RFC 9112 6.1: a Transfer-Encoding other than exactly "chunked" is refused; an empty one
// too (httplib 0.11 drops an empty header line, so the request was read as body-less: a 400
// "malformed JSON body" and the chunks, here carrying a GET /health, parsed as the next
// request). An empty Content-Length is not a number.
TEST_F(ServeConnection, AnEmptyTransferEncodingOrContentLengthIs400AndNothingIsSmuggled) {
  const std::string smuggled = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const std::string chunks = fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", smuggled.size(), smuggled);
  for (const std::string te : {"Transfer-Encoding:", "Transfer-Encoding: ", "transfer-encoding:\t"}) {
    SCOPED_TRACE(te);
    const auto got = exchange(port(), kPostHead + te + "\r\n\r\n" + chunks + smuggled);
    expect_one_error_then_end(got, "400 Bad Request",
                              "unsupported Transfer-Encoding '' (only 'chunked', in lowercase, is read)");
    EXPECT_EQ(got.bytes.find("\"status\":\"ok\""), std::string::npos) << got.bytes;
  }
  expect_one_error_then_end(exchange(port(), kPostHead + "Content-Length:\r\n\r\n" + smuggled), "400 Bad Request",
                            "malformed Content-Length header (not a decimal number)");
}

// A client that sends its whole request and then shuts down its sending side (`nc -N`,
// shutdown(SHUT_WR)) still reads: it gets its answer. For a completion still being generated
// when the FIN is seen, the server probes with an interim "100 Continue" (a closed client
// would answer it with a reset and be cancelled) and then sends the golden answer.
TEST_F(ServeConnection, AHalfClosedClientGetsItsAnswer) {
  const auto health = exchange(port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", /*half_close=*/true);
  EXPECT_EQ(health.bytes.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << health.bytes;
  EXPECT_EQ(health.bytes.substr(health.bytes.find("\r\n\r\n") + 4), R"({"status":"ok"})");
  EXPECT_TRUE(health.ended);  // the client sends nothing more: the server closes

  const auto c = golden_case(0);
  const std::string body =
      json({{"prompt", c.at("prompt")}, {"max_tokens", c.at("n_steps")}, {"temperature", 0}}).dump();
  auto got = exchange(port(), post_request("/v1/completions", body), /*half_close=*/true, 20).bytes;
  const std::string interim = "HTTP/1.1 100 Continue\r\n\r\n";
  if (got.rfind(interim, 0) == 0) got = got.substr(interim.size());
  ASSERT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  const auto j = json::parse(got.substr(got.find("\r\n\r\n") + 4), nullptr, false);
  ASSERT_TRUE(j.is_object()) << got;
  EXPECT_EQ(j["choices"][0]["text"], c.at("completion_text"));
  EXPECT_EQ(j["usage"]["completion_tokens"], c.at("n_steps"));
}

// HTTP/1.0 has no 1xx responses, so the probe at a FIN is the first bytes of the answer
// itself ("HTTP/1.1 "): a half-closed HTTP/1.0 client gets exactly its golden answer (it was
// sent a 499, taken as gone), and one that really closed answers the probe with a reset and
// is still cancelled (a 499 counted, its slot freed long before its 300 tokens).
TEST_F(ServeConnection, AHalfClosedHttp10ClientGetsItsAnswerAndAClosedOneIsCancelled) {
  const auto c = golden_case(0);
  const auto http10 = [](const std::string& body) {
    return "POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  const std::string body =
      json({{"prompt", c.at("prompt")}, {"max_tokens", c.at("n_steps")}, {"temperature", 0}}).dump();
  const auto got = exchange(port(), http10(body), /*half_close=*/true, 20);
  ASSERT_EQ(got.bytes.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got.bytes;
  EXPECT_EQ(count_of(got.bytes, "HTTP/1.1 "), 1u) << got.bytes;
  const auto j = json::parse(got.bytes.substr(got.bytes.find("\r\n\r\n") + 4), nullptr, false);
  ASSERT_TRUE(j.is_object()) << got.bytes;
  EXPECT_EQ(j["choices"][0]["text"], c.at("completion_text"));
  EXPECT_EQ(j["usage"]["completion_tokens"], c.at("n_steps"));
  EXPECT_TRUE(got.ended);

  const std::string cancelled = R"(llmport_requests_total{endpoint="/v1/completions",status="499"})";
  const double before = std::max(0.0, metric(curl("GET", server_->url("/metrics")).body, cancelled));
  const int fd = raw_connect_send(port(), http10(R"({"prompt":"Once upon","max_tokens":300,"temperature":0})"));
  ASSERT_TRUE(wait_metric(*server_, "llmport_kv_cache_slots_in_use", 1));  // running (300 x 10 ms)
  close(fd);
  EXPECT_TRUE(wait_metric(*server_, cancelled, before + 1));
  EXPECT_TRUE(wait_metric(*server_, "llmport_kv_cache_slots_in_use", 0));
}

// A request whose bytes stop coming (--read-timeout 1): a 408 in OpenAI's shape, then the
// connection ends; whether the stall is in the body (shorter than its Content-Length), the
// headers or the request line (httplib answered the first with a 400 after the timeout and
// the others with nothing).
TEST_F(ServeConnection, AStalledRequestGets408AndTheConnectionEnds) {
  const std::string body = R"({"prompt":"Once upon","max_tokens":1})";
  const std::string head = kPostHead + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  expect_one_error_then_end(exchange(port(), head + body.substr(0, 5)), "408 Request Timeout",
                            "request body not received within the read timeout of 1 s");
  expect_one_error_then_end(exchange(port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"), "408 Request Timeout",
                            "request headers not received within the read timeout of 1 s");
  expect_one_error_then_end(exchange(port(), "GET /heal"), "408 Request Timeout",
                            "request not received within the read timeout of 1 s");
}

// RFC 6585 5: 431 for a header line over 8192 bytes (CRLF included, httplib's limit: it
// answered 400) or header lines over 64 KiB together; a line of exactly 8192 is served.
TEST_F(ServeConnection, HeaderFieldsOverTheLimitAre431) {
  const std::string get = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  auto line = [](std::size_t total) { return "X-Big: " + std::string(total - 9, 'a') + "\r\n"; };
  const std::string message = "request header fields over the limit of 8192 bytes per line or 65536 bytes in all";
  expect_one_error_then_end(exchange(port(), get + line(200 * 1024) + "\r\n"), "431 Request Header Fields Too Large",
                            message);
  expect_one_error_then_end(exchange(port(), get + line(8193) + "\r\n"), "431 Request Header Fields Too Large",
                            message);
  std::string many;
  for (int i = 0; i < 70; ++i) many += fmt::format("X-{:02}: {}\r\n", i, std::string(1000, 'b'));
  expect_one_error_then_end(exchange(port(), get + many + "\r\n"), "431 Request Header Fields Too Large", message);
  const auto ok = exchange(port(), get + line(8192) + "Connection: close\r\n\r\n");
  EXPECT_EQ(ok.bytes.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok.bytes.substr(0, 300);
}

TEST_F(ServeConnection, ARequestLineOverTheLimitIs414InLlmportsWords) {
  expect_one_error_then_end(exchange(port(), "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
                            "414 URI Too Long", "request line longer than 8192 bytes");
}

// A refusal sent with the request's body unread ends the connection right after the
// response: bytes of that body (here a GET /health) are never parsed as a next request
// (httplib 0.11 kept the connection to its keep-alive timeout and served them). So does an
// HTTP/1.0 keep-alive request's answer (always "Connection: close", docs/serving.md).
TEST_F(ServeConnection, ARefusalWithConnectionCloseEndsTheConnectionAtOnce) {
  const std::string next = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  expect_one_error_then_end(exchange(port(), kPostHead + "Content-Length: 9437184\r\n\r\n" + next),
                            "413 Payload Too Large", "request body over the limit of 8388608 bytes",
                            "request_too_large");
  expect_one_error_then_end(exchange(port(), "NOT AN HTTP REQUEST\r\n\r\n" + next), "400 Bad Request",
                            "malformed HTTP request");
  const auto got = exchange(port(), "GET /health HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n" + next);
  EXPECT_EQ(got.bytes.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got.bytes;
  EXPECT_EQ(count_of(got.bytes, "HTTP/1.1 "), 1u) << got.bytes;
  EXPECT_TRUE(got.ended);
}

}  // namespace
}  // namespace llmport::test
