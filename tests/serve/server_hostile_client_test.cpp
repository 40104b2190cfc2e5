// `llmport serve` against unusual or hostile clients on raw loopback sockets: the header
// section and unread-body cases found by probing the connection layer
// (src/serve/http_connection.cpp) and the pre-routing handler (src/serve/server.cpp). Each
// test asserts what RFC 9110/9112 require; the comment above each says what the server did
// before its fix.

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

}  // namespace
}  // namespace llmport::test
