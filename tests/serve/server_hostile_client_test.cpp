// `llmport serve` against unusual or hostile clients on raw loopback sockets: the header
// section, unread-body, request-target, chunked-trailer and slow-header cases found by
// probing the connection layer (src/serve/http_connection.cpp) and the pre-routing handler
// (src/serve/server.cpp). Each test asserts what RFC 9110/9112 require (ServeSlowloris: that
// /health stays up); the comment above each says what the server did before its fix.

#include <atomic>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "serve/serve_test_util.hpp"

namespace llmport::test {
namespace {

using json = nlohmann::json;

const std::string kSmuggled = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
const std::string kHealthOk = R"({"status":"ok"})";

// Everything the connection carries until the server ends it or `seconds` pass.
std::string exchange_bytes(int port, const std::string& request, int seconds = 4) {
  return exchange(port, request, false, seconds).bytes;
}

std::size_t responses_in(const std::string& s) { return count_of(s, "HTTP/1.1 "); }

std::string completion_body() { return R"({"prompt":"Once upon","max_tokens":4,"temperature":0})"; }

class ServeHostileClient : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({stories(), "--parallel", "2", "--threads", "1", "--read-timeout", "1",
                                 "--api-key", "k3y"});
    ASSERT_TRUE(server_->wait_ready()) << server_->stderr_text();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }
  static ServerProcess* server_;
};
ServerProcess* ServeHostileClient::server_ = nullptr;

// The pre-routing handler's 401 (and its 503 while loading or draining) leaves the body
// unread without "Connection: close": the body's bytes are parsed as a next request and
// the smuggled GET /health is answered 200 on the same connection.
TEST_F(ServeHostileClient, TheBodyOfA401IsNeverParsedAsANextRequest) {
  const std::string req = fmt::format(
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\n"
      "Content-Length: {}\r\n\r\n{}",
      kSmuggled.size(), kSmuggled);
  const std::string got = exchange_bytes(port(), req);
  EXPECT_EQ(got.rfind("HTTP/1.1 401 Unauthorized\r\n", 0), 0u) << got;
  EXPECT_EQ(responses_in(got), 1u) << got;
  EXPECT_EQ(got.find(kHealthOk), std::string::npos) << got;
}

// httplib applied a Range header to every answer: a POST generation came back as "206
// Partial Content" of its first bytes (the rest generated and thrown away), two ranges as
// multipart/byteranges, a range past the end as a 416 with an invalid Content-Range. Range
// is ignored (RFC 9110 14.2): the whole answer, 200.
TEST_F(ServeHostileClient, ARangeHeaderIsIgnored) {
  const std::string body = completion_body();
  for (const char* range : {"bytes=0-20", "bytes=0-5,10-15", "bytes=99999-"}) {
    SCOPED_TRACE(range);
    const std::string req = fmt::format(
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k3y\r\nRange: {}\r\n"
        "Connection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
        range, body.size(), body);
    const std::string got = exchange_bytes(port(), req, 8);
    EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
    EXPECT_EQ(got.find("Content-Range"), std::string::npos) << got;
    const std::string json_body = got.substr(got.find("\r\n\r\n") + 4);
    EXPECT_EQ(nlohmann::json::parse(json_body)["object"], "text_completion") << got;
  }
  const std::string health = exchange_bytes(
      port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=0-3\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(health.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << health;
  EXPECT_NE(health.find(kHealthOk), std::string::npos) << health;
  // A Range httplib cannot parse it refuses (416) before the request is routed; that answer
  // said only "HTTP 416" and kept the connection with the body unread (its bytes read as the
  // head of a next request). Now: the header named, and the connection ends.
  const std::string bad = fmt::format(
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k3y\r\nRange: bytes=abc\r\n"
      "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
      body.size(), body);
  const std::string refused = exchange_bytes(port(), bad, 8);
  EXPECT_EQ(refused.rfind("HTTP/1.1 416 ", 0), 0u) << refused;
  EXPECT_NE(refused.find("\"message\":\"Range header 'bytes=abc' not understood (a well-formed, satisfiable Range is "
                         "ignored: send one or none)\""),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("Connection: close"), std::string::npos) << refused;
  EXPECT_EQ(count_of(refused, "HTTP/1.1 "), 1u) << refused;  // the body is no second request
}

// An HTTP/1.0 client's stream came chunked ("aa\r\n" before each event, read as data by a
// client that knows no chunked coding, RFC 9112 6.1). It is sent unframed, ended by the close.
TEST_F(ServeHostileClient, AnHttp10StreamIsNotChunked) {
  const std::string body = R"({"prompt":"Once upon","max_tokens":4,"temperature":0,"stream":true})";
  const std::string req = fmt::format(
      "POST /v1/completions HTTP/1.0\r\nAuthorization: Bearer k3y\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\n\r\n{}",
      body.size(), body);
  const std::string got = exchange_bytes(port(), req, 8);
  ASSERT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  const std::string head = got.substr(0, got.find("\r\n\r\n"));
  EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos) << head;
  const std::string events = got.substr(got.find("\r\n\r\n") + 4);
  EXPECT_EQ(events.rfind("data: {", 0), 0u) << events;  // no chunk size first
  EXPECT_EQ(count_of(events, "data: "), 6u) << events;  // 4 tokens, the finish chunk, [DONE]
  EXPECT_NE(events.find("data: [DONE]\n\n"), std::string::npos) << events;
  EXPECT_EQ(events.substr(events.size() - 14), "data: [DONE]\n\n") << events;
}

// ConnectionStream takes any line of at most 2 bytes ("\n", "X\n") as the end of the header
// section, while httplib skips such lines and goes on reading headers: the 64 KiB header
// bound (431) no longer applies after one, and 96 MB of headers were accepted (RSS +140 MB).
TEST_F(ServeHostileClient, ABareLfLineDoesNotLiftTheHeaderSectionLimit) {
  std::string many;
  for (int i = 0; i < 70; ++i) many += fmt::format("X-{:02}: {}\r\n", i, std::string(1000, 'b'));
  for (const std::string odd : {"\n", "X\n"}) {
    SCOPED_TRACE(json(odd).dump());
    const std::string got = exchange_bytes(port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + odd + many + "\r\n");
    EXPECT_EQ(got.rfind("HTTP/1.1 431 Request Header Fields Too Large\r\n", 0), 0u) << got.substr(0, 200);
  }
}

// RFC 9112 5.1: whitespace between a field name and its colon MUST be answered 400.
// httplib ignores "Content-Length :" (the body is left unread and the smuggled request in it
// is served) and "Transfer-Encoding :" (the body is read by Content-Length: a front end that
// honours the chunked coding frames it differently).
TEST_F(ServeHostileClient, WhitespaceBeforeAHeaderColonIs400) {
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k3y\r\n";
  const std::string cl = exchange_bytes(port(), head + fmt::format("Content-Length : {}\r\n\r\n{}", kSmuggled.size(), kSmuggled));
  EXPECT_EQ(cl.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << cl;
  EXPECT_EQ(responses_in(cl), 1u) << cl;
  EXPECT_EQ(cl.find(kHealthOk), std::string::npos) << cl;

  const std::string body = completion_body();
  const std::string te =
      exchange_bytes(port(), head + fmt::format("Transfer-Encoding : chunked\r\nContent-Length: {}\r\n\r\n{}", body.size(), body));
  EXPECT_EQ(te.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << te;
}

// RFC 9112 3.2: an HTTP/1.1 request without Host, or with two, MUST be answered 400 (was 200).
TEST_F(ServeHostileClient, AnHttp11RequestWithoutExactlyOneHostIs400) {
  const std::string none = exchange_bytes(port(), "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(none.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << none;
  const std::string two = exchange_bytes(port(), "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(two.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << two;
}

// The error message of a one-response exchange (its OpenAI-shaped body), "" if none.
std::string error_message(const std::string& got) {
  const json j = json::parse(got.substr(std::min(got.size(), got.find("\r\n\r\n") + 4)), nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"].value("message", "") : "";
}

// RFC 9110 10.1.1: a server MUST ignore "Expect: 100-continue" in an HTTP/1.0 request (1xx
// responses do not exist in HTTP/1.0). httplib answered "HTTP/1.1 100 Continue" first.
TEST_F(ServeHostileClient, AnHttp10ClientNeverGets100Continue) {
  const std::string body = completion_body();
  const std::string got = exchange_bytes(
      port(), fmt::format("POST /v1/completions HTTP/1.0\r\nAuthorization: Bearer k3y\r\nExpect: 100-continue\r\n"
                          "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                          body.size(), body));
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_EQ(got.find("100 Continue"), std::string::npos) << got;
  EXPECT_EQ(responses_in(got), 1u) << got;
}

// RFC 9112 3.2.2: a server MUST accept the absolute form of a request target; it is routed
// by its path (was 404 "unknown route GET http://127.0.0.1:PORT/health"). A target with no
// path is "/"; an unknown path in absolute form is a 404 naming the path alone.
TEST_F(ServeHostileClient, AnAbsoluteFormTargetIsServed) {
  for (const std::string scheme : {"http", "HTTP", "https"}) {
    SCOPED_TRACE(scheme);
    const std::string got = exchange_bytes(
        port(), fmt::format("GET {}://127.0.0.1:{}/health?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                            scheme, port()));
    EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
    EXPECT_EQ(got.substr(got.find("\r\n\r\n") + 4), kHealthOk);
  }
  const std::string root = exchange_bytes(port(), "GET http://127.0.0.1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(root.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << root;
  EXPECT_EQ(error_message(root), "unknown route GET /") << root;
}

// RFC 9112 7.1.2: a chunked body may end with trailer fields, which a recipient may discard
// (was 400 "could not read the request body": httplib 0.11 fails on any trailer line). The
// connection stays usable: a request pipelined after the trailers is answered too.
TEST_F(ServeHostileClient, AChunkedBodyWithTrailersIsRead) {
  const std::string body = completion_body();
  const std::string got = exchange_bytes(
      port(), fmt::format("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k3y\r\n"
                          "Transfer-Encoding: chunked\r\n\r\n{:x};ext=1\r\n{}\r\n0\r\nX-Trailer: 1\r\nX-Two:\r\n\r\n"
                          "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                          body.size(), body));
  ASSERT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  const std::size_t second = got.find("HTTP/1.1 ", 1);
  ASSERT_NE(second, std::string::npos) << got;
  const std::string first = got.substr(0, second);
  const json j = json::parse(first.substr(first.find("\r\n\r\n") + 4), nullptr, false);
  EXPECT_EQ(j["usage"]["completion_tokens"], 4) << got;
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", second), second) << got;
  EXPECT_EQ(got.substr(got.find("\r\n\r\n", second) + 4), kHealthOk);
}

// A chunk not followed by CRLF, or a chunk size that is not plain hex, is a malformed body:
// 400 and the connection ends (httplib 0.11 took "5\r\nhelloXX\r\n" as a whole body "hello"
// and parsed the bytes after it as the next request; "0x5" was read as 5).
TEST_F(ServeHostileClient, AMalformedChunkIs400AndNothingAfterItIsServed) {
  const std::string head =
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k3y\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (const std::string chunks : {"5\r\nhelloXX\r\n", "0x5\r\nhello\r\n0\r\n\r\n", " 5\r\nhello\r\n0\r\n\r\n"}) {
    SCOPED_TRACE(json(chunks).dump());
    const std::string got = exchange_bytes(port(), head + chunks + kSmuggled);
    EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << got;
    EXPECT_EQ(error_message(got), "malformed chunked request body") << got;
    EXPECT_EQ(responses_in(got), 1u) << got;
    EXPECT_EQ(got.find(kHealthOk), std::string::npos) << got;
  }
}

// RFC 9112 5.2: obs-fold (a header line starting with a space or tab) MUST be rejected with
// 400 or replaced; RFC 9110 5.5: NUL, CR and LF are invalid in a field value (a bare LF ends
// the line for a front end that accepts it, while httplib dropped such a line). All were
// served 200 (the field kept, cut or dropped).
TEST_F(ServeHostileClient, ObsFoldAndNulCrOrBareLfInAHeaderAre400) {
  const std::string get = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  const std::pair<std::string, std::string> cases[] = {
      {"X-A: a\r\n b\r\n", "obs-fold (a header line starting with a space or tab) is not accepted"},
      {"X-A: a\r\n\tb\r\n", "obs-fold (a header line starting with a space or tab) is not accepted"},
      {std::string("X-A: a\0b\r\n", 10), "a NUL byte in the header 'X-A'"},
      {"X-A: a\rb\r\n", "a CR not followed by LF in the header 'X-A'"},
      {"X-A: a\nX-B: b\r\n", "a header line ending in a bare LF (not CRLF): 'X-A'"},
      {"Transfer-Encoding chunked\r\n", "a header line without a colon: 'Transfer-Encoding chunked'"},
      {": x\r\n", "a header line with an empty name"},
  };
  for (const auto& [line, message] : cases) {
    SCOPED_TRACE(json(line).dump());
    const std::string got = exchange_bytes(port(), get + line + "\r\n" + kSmuggled);
    EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << got;
    EXPECT_EQ(error_message(got), message) << got;
    EXPECT_EQ(responses_in(got), 1u) << got;
  }
}

// A CR inside the request line: httplib kept it in the target and answered 404 "unknown
// route GET /health\r". (A NUL there httplib refuses itself: "malformed HTTP request".)
TEST_F(ServeHostileClient, ACrOrNulInsideTheRequestLineIs400) {
  for (const auto& [line, message] : {std::pair<std::string, std::string>{"GET /health\r HTTP/1.1\r\n",
                                                                          "a CR inside the request line"},
                                      {std::string("GET /hea\0lth HTTP/1.1\r\n", 23), "malformed HTTP request"}}) {
    SCOPED_TRACE(json(line).dump());
    const std::string got = exchange_bytes(port(), line + "Host: 127.0.0.1\r\n\r\n" + kSmuggled);
    EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << got;
    EXPECT_EQ(error_message(got), message) << got;
    EXPECT_EQ(responses_in(got), 1u) << got;
  }
}

// RFC 9112 2.2: a server SHOULD ignore at least one empty line before a request line (some
// clients send a CRLF after a POST body). Was 400 "malformed HTTP request", on a fresh
// connection and after a body alike.
TEST_F(ServeHostileClient, EmptyLinesBeforeARequestLineAreIgnored) {
  const std::string fresh = exchange_bytes(port(), "\r\n\r\nGET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(fresh.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << fresh;
  EXPECT_EQ(fresh.substr(fresh.find("\r\n\r\n") + 4), kHealthOk);

  const std::string body = completion_body();
  const std::string got = exchange_bytes(
      port(), fmt::format("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k3y\r\n"
                          "Content-Length: {}\r\n\r\n{}\r\nGET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                          body.size(), body));
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_EQ(responses_in(got), 2u) << got;
  EXPECT_EQ(got.substr(got.rfind("\r\n\r\n") + 4), kHealthOk) << got;
}

// httplib 0.11 reads a body only for POST, PUT, PATCH and DELETE: a GET's (or OPTIONS')
// Content-Length or chunked body was left on the connection and parsed as a next request
// (the smuggled GET /health answered 200 a second time). Now the request is answered with
// "Connection: close" and the connection ends.
TEST_F(ServeHostileClient, TheBodyOfAGetIsNeverParsedAsANextRequest) {
  const std::string chunked = fmt::format("Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n0\r\n\r\n", kSmuggled.size(), kSmuggled);
  const std::string sized = fmt::format("Content-Length: {}\r\n\r\n{}", kSmuggled.size(), kSmuggled);
  for (const std::string method : {"GET /health", "OPTIONS /health"}) {
    for (const std::string& framing : {sized, chunked}) {
      SCOPED_TRACE(method + " " + json(framing).dump());
      const Received got = exchange(port(), method + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + framing);
      EXPECT_EQ(responses_in(got.bytes), 1u) << got.bytes;
      EXPECT_NE(got.bytes.find("\r\nConnection: close\r\n"), std::string::npos) << got.bytes;
      EXPECT_TRUE(got.ended) << got.bytes;
    }
  }
  const std::string health = exchange_bytes(port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + sized);
  EXPECT_EQ(health.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << health;
  EXPECT_EQ(health.substr(health.find("\r\n\r\n") + 4), kHealthOk);
}

// Slowloris: --read-timeout bounded the wait for each next byte, not for the whole request
// head, so a client trickling a header line every half read timeout held its pool thread for
// as long as it liked. Pool threads are parallel + queue + 4 (here 1 + 0 + 4 = 5): 6 such
// clients stopped the server answering anything, /health included (measured by hand: 60 of
// them against the default pool of 22 kept /health unanswered for 40 s and more). Now the
// head must arrive whole within --read-timeout: each trickler gets its 408 and its thread is
// free after that and the lingering close (2 s at most), so /health is answered. (The
// default pool is now parallel + queue + 64 threads and ends waiting connections for new
// ones: ServeConnectionPool; here the 6 tricklers fit in it, and each still gets its 408.)
TEST(ServeSlowloris, HeadersTrickledBelowTheReadTimeoutDoNotStarveHealth) {
  ServerProcess server({stories(), "--parallel", "1", "--queue", "0", "--threads", "1", "--read-timeout", "1"});
  ASSERT_TRUE(server.wait_ready()) << server.stderr_text();
  std::vector<int> slow;
  for (int i = 0; i < 6; ++i) slow.push_back(raw_connect_send(server.port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  // Keep trickling (every 0.5 s, under the 1 s read timeout) while /health is asked.
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    for (int k = 0; !stop.load(); ++k) {
      const std::string line = fmt::format("X-{}: y\r\n", k);
      for (int fd : slow) ::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
      for (int t = 0; t < 10 && !stop.load(); ++t) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  const int fd = raw_connect_send(server.port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  const std::string got = read_until(fd, "\"status\"", 6);
  close(fd);
  // The 408 comes about 1 s (the read timeout) after connecting; a 1 s wait that starts after
  // /health's answer ended just after the 408's head, before its body, under TSan (CI, stop
  // 29). read_until returns at the "}", so the longer wait costs nothing.
  std::string first_slow = read_until(slow[0], "}", 5);
  stop = true;
  trickle.join();
  for (int s : slow) close(s);
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << "no answer to /health within 6 s: '" << got << "'";
  EXPECT_EQ(first_slow.rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u) << first_slow;
  EXPECT_EQ(error_message(first_slow), "request headers not received within the read timeout of 1 s") << first_slow;
}

}  // namespace
}  // namespace llmport::test

namespace llmport::test {
namespace {

// SIGTERM ends connections still on their clients when the grace period is over: a request
// head that never completes (read timeout 30 s), and a body trickled one byte per second
// (under the read timeout, for ever) each held a pool thread, and the server's exit waited
// for them: 31 s for the head, until the client gave up for the body, whatever
// --shutdown-grace said.
TEST(ServeSlowloris, SigtermEndsRequestsStillArrivingAfterTheGrace) {
  ServerProcess server({stories(), "--parallel", "1", "--threads", "1", "--read-timeout", "30", "--shutdown-grace",
                        "1"});
  ASSERT_TRUE(server.wait_ready()) << server.stderr_text();
  const int head = raw_connect_send(server.port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  const int body = raw_connect_send(server.port(), "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                   "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
  ASSERT_GE(head, 0);
  ASSERT_GE(body, 0);
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop.load()) {
      ::send(body, " ", 1, MSG_NOSIGNAL);
      for (int t = 0; t < 10 && !stop.load(); ++t) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  // Both connections are being read (their threads are in the pool) before the signal.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto t0 = std::chrono::steady_clock::now();
  const int code = server.signal_and_wait(SIGTERM, 15);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop = true;
  trickle.join();
  close(head);
  close(body);
  EXPECT_EQ(code, 0) << "still running 15 s after SIGTERM with a 1 s grace: " << server.stderr_text();
  EXPECT_LT(took, 8.0);
}

}  // namespace
}  // namespace llmport::test
