// `llmport serve` against what a server meets in the field: a second server on a bound
// port (exit 2, not a silently shared port), bodies in curl -d's default content type
// (application/x-www-form-urlencoded) above httplib's 8 KiB cap for that type, chunked
// bodies over the limit, and a non-streamed request whose client hangs up (cancelled, slot
// freed, the next request served).
#include <chrono>
#include <utility>
#include <fstream>

#include <fmt/format.h>

#include "serve/serve_test_util.hpp"

namespace llmport::test {
namespace {

using json = nlohmann::json;

// curl with a body from a file and no Content-Type of ours (curl's default for --data-binary
// is application/x-www-form-urlencoded), plus extra arguments.
HttpResult curl_file(const std::string& url, const std::filesystem::path& body, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {"curl", "-sS", "-o", "-", "--max-time", "60", "-w", "\n%{http_code}",
                                   "--data-binary", "@" + body.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(url);
  const auto r = run_program(argv);
  HttpResult h;
  const auto nl = r.out.rfind('\n');
  if (nl == std::string::npos) return h;
  h.status = std::atoi(r.out.c_str() + nl + 1);
  h.body = r.out.substr(0, nl);
  return h;
}

void expect_openai_error(const HttpResult& r, int status, const std::string& message_part) {
  EXPECT_EQ(r.status, status) << r.body;
  const auto j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  EXPECT_TRUE(j["error"]["type"].is_string());
  EXPECT_TRUE(j["error"].contains("param"));
  EXPECT_TRUE(j["error"].contains("code"));
  EXPECT_NE(j["error"]["message"].get<std::string>().find(message_part), std::string::npos) << r.body;
}

TEST(ServePort, ASecondServerOnABoundPortExits2NamingHostAndPort) {
  ServerProcess first({stories(), "--parallel", "1", "--threads", "1"});
  ASSERT_GT(first.port(), 0) << first.stderr_text();
  const std::string port = std::to_string(first.port());
  // Bounded: a second server that binds (the bug) would serve until the timeout (exit 124).
  const auto r = run_program({"timeout", "20", LLMPORT_BIN, "serve", stories(), "--port", port, "--threads", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("error: cannot bind 127.0.0.1:" + port + ": ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");  // never "listening on"
  ASSERT_TRUE(first.wait_ready()) << first.stderr_text();
  EXPECT_EQ(first.signal_and_wait(SIGTERM, 20), 0);
}

// --chat-template-file that is a directory, empty (or only whitespace) or missing: exit 2 at
// startup with one line naming the file, never "listening on" (read as "no template", the
// server answered every chat request "this model has no chat template").
TEST(ServeStartup, AChatTemplateFileThatIsADirectoryOrEmptyIsRefusedWithExit2) {
  TempDir dir;
  const auto empty = dir.path() / "empty.jinja";
  const auto blank = dir.path() / "blank.jinja";
  write_file(empty, "");
  write_file(blank, " \n\t\n");
  const std::string d = dir.path().string();
  const struct {
    std::string file, error;
  } cases[] = {{d, "error: --chat-template-file " + d + ": is a directory, expected a file\n"},
               {empty.string(), "error: --chat-template-file " + empty.string() +
                                    ": empty file (expected a Jinja chat template)\n"},
               {blank.string(), "error: --chat-template-file " + blank.string() +
                                    ": empty file (expected a Jinja chat template)\n"},
               {d + "/missing.jinja", "error: --chat-template-file " + d +
                                          "/missing.jinja: cannot open for reading: No such file or directory\n"}};
  for (const auto& c : cases) {
    const auto r = run_program({"timeout", "20", LLMPORT_BIN, "serve", stories(), "--port", "0", "--threads", "1",
                                "--chat-template-file", c.file});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, c.error);
    EXPECT_EQ(r.out, "");  // never "listening on"
  }
}

// A template that raises (transformers' raise_exception) answers 400 with the template's
// line and message, once prefixed: no "chat template: chat template", and no server path
// (the file the template came from is named in the server's own errors, not to clients).
TEST(ServeStartup, ATemplatesRaiseIsA400WithItsMessageOnly) {
  TempDir dir;
  const auto tmpl = dir.path() / "raises.jinja";
  write_file(tmpl, "{{ raise_exception('no system role here') }}");
  ServerProcess s({stories(), "--threads", "1", "--chat-template-file", tmpl.string()});
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  const auto r = curl("POST", s.url("/v1/chat/completions"),
                      R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})");
  EXPECT_EQ(r.status, 400) << r.body;
  const auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["error"]["message"], "chat template line 1: raise_exception: no system role here") << r.body;
  EXPECT_EQ(r.body.find(dir.path().string()), std::string::npos) << r.body;
}

class ServeBodies : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({stories(), "--parallel", "2", "--threads", "1"});
    ASSERT_TRUE(server_->wait_ready()) << server_->stderr_text();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static ServerProcess* server_;
  TempDir dir_;
};
ServerProcess* ServeBodies::server_ = nullptr;

TEST_F(ServeBodies, A100KiBFormEncodedBodyIsServedWithTheGoldenAnswer) {
  const auto c = golden_case(0);
  json req = {{"prompt", c.at("prompt")}, {"max_tokens", c.at("n_steps")}, {"temperature", 0},
              {"padding", std::string(100 << 10, 'x')}};  // unknown fields are ignored
  const auto file = dir_.path() / "body.json";
  write_file(file, req.dump());
  ASSERT_GT(std::filesystem::file_size(file), 100u << 10);
  const auto r = curl_file(server_->url("/v1/completions"), file);  // no Content-Type: form-encoded
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], c.at("completion_text"));
  // And the same through an unknown route: 404, not httplib's 8 KiB 413.
  expect_openai_error(curl_file(server_->url("/v1/nope"), file), 404, "unknown route POST /v1/nope");
}

// A POST with neither Content-Length nor chunked encoding has no body (RFC 9112 6.3): the
// 400 comes at once, not after the server's read timeout (it used to wait 30 s).
TEST_F(ServeBodies, APostWithoutALengthIsAnImmediate400) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_program({"curl", "-sS", "-X", "POST", server_->url("/v1/completions"), "-H",
                              "Content-Type: application/json", "--max-time", "20", "-o", "-", "-w", "\n%{http_code}"});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 5.0) << r.out;
  EXPECT_NE(r.out.find("\n400"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("\"error\""), std::string::npos) << r.out;
}

TEST_F(ServeBodies, BodiesOverTheLimitAre413NamingItFormEncodedOrChunked) {
  const auto file = dir_.path() / "big.json";
  write_file(file, R"({"prompt":")" + std::string((8u << 20) + 10, 'a') + R"("})");
  const std::string limit = "request body over the limit of 8388608 bytes";
  expect_openai_error(curl_file(server_->url("/v1/completions"), file), 413, limit);
  expect_openai_error(curl_file(server_->url("/v1/completions"), file,
                                {"-H", "Content-Type: application/json", "-H", "Transfer-Encoding: chunked"}),
                      413, limit);
  EXPECT_EQ(curl("GET", server_->url("/health")).status, 200);
}

// A declared Content-Length over the limit is answered before any body byte is sent (the
// client waits, as one sending "Expect: 100-continue" does), with one Connection header that
// says close and no Keep-Alive; so are a Content-Length that is not a number, a body framing
// the server does not read (RFC 9112 6.1-6.3) and a request httplib cannot parse.
TEST_F(ServeBodies, UnreadBodiesAndBadFramingAreAnsweredAtOnceAndCloseTheConnection) {
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  const std::string over = "request body over the limit of 8388608 bytes";
  const struct {
    std::string request;
    int status;
    std::string message;
  } cases[] = {{head + "Content-Length: 9437184\r\n\r\n", 413, over},
               {head + "Content-Length: 99999999999999999999999\r\n\r\n", 413, over},
               {head + "Content-Length: 12abc\r\n\r\n", 400, "malformed Content-Length header"},
               {head + "Transfer-Encoding: gzip\r\n\r\n", 400, "unsupported Transfer-Encoding"},
               {head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
                "both Content-Length and Transfer-Encoding"},
               {"NOT AN HTTP REQUEST\r\n\r\n", 400, "malformed HTTP request"},
               // A well-formed request line with a method no one implements: 501 (RFC 9110 9.1).
               {"FOO /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 501,
                "\"method FOO is not implemented (this server answers GET, HEAD, POST, PUT, PATCH, DELETE and "
                "OPTIONS)\",\"param\":null,\"type\":\"invalid_request_error\""},
               // httplib routes no TRACE or CONNECT either (it said 400 "malformed" to them too).
               {"TRACE /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 501, "method TRACE is not implemented"},
               {"CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 501, "method CONNECT is not implemented"},
               {"F(O /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400, "malformed HTTP request"},
               {"FOO /v1/models HTTP/2\r\nHost: 127.0.0.1\r\n\r\n", 400, "malformed HTTP request"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.request.substr(0, c.request.find("\r\n\r\n")));
    const auto t0 = std::chrono::steady_clock::now();
    const int fd = raw_connect_send(server_->port(), c.request);
    ASSERT_GE(fd, 0);
    const std::string got = read_until(fd, "}}", 5);
    close(fd);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0) << got;
    EXPECT_EQ(got.rfind("HTTP/1.1 " + std::to_string(c.status), 0), 0u) << got;
    EXPECT_NE(got.find(c.message), std::string::npos) << got;
    const std::string headers = got.substr(0, got.find("\r\n\r\n"));
    EXPECT_NE(headers.find("Connection: close"), std::string::npos) << headers;
    EXPECT_EQ(headers.find("Keep-Alive"), std::string::npos) << headers;
    EXPECT_EQ(headers.find("Connection:"), headers.rfind("Connection:")) << "two Connection headers: " << headers;
  }
  EXPECT_EQ(curl("GET", server_->url("/health")).status, 200);
}

// What a connection carries from `fd` to its end (httplib closes an idle one after 2 s): the
// bytes and the seconds until the end (6 s at most).
std::pair<std::string, double> read_to_end(int fd) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = read_until(fd, "\x01 never sent", 6);
  return {got, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

// The whole of what a raw `request` gets on a fresh loopback connection to `port`; "" when it
// cannot connect (every caller then fails on the status line it expects).
std::string exchange(int port, const std::string& request) {
  const int fd = raw_connect_send(port, request);
  if (fd < 0) return "";
  std::string got = read_to_end(fd).first;
  close(fd);
  return got;
}

// A 200 whose body is a completion of the one token these requests ask for.
void expect_one_token_completion(const std::string& got) {
  ASSERT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_EQ(json::parse(got.substr(got.find("\r\n\r\n") + 4)).at("usage").at("completion_tokens"), 1);
}

std::size_t count_of(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (auto p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

// RFC 9112 6.3: Content-Length headers with different values are an error (httplib reads
// the first and would serve the request; with "Expect: 100-continue" it said "100
// Continue"); identical duplicates are one length.
TEST_F(ServeBodies, ConflictingContentLengthsAre400WithConnectionClose) {
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  const std::string body = R"({"prompt":"Once upon","max_tokens":1})";
  const std::string len = std::to_string(body.size());
  for (const std::string expect : {"", "Expect: 100-continue\r\n"}) {
    SCOPED_TRACE(expect);
    const std::string got = exchange(server_->port(), head + expect + "Content-Length: " + len +
                                                          "\r\nContent-Length: 9437184\r\n\r\n" +
                                                          (expect.empty() ? body : std::string()));
    EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << got;
    EXPECT_EQ(got.find("100 Continue"), std::string::npos) << got;
    EXPECT_EQ(got.find("200 OK"), std::string::npos) << got;
    const std::string headers = got.substr(0, got.find("\r\n\r\n"));
    EXPECT_NE(headers.find("Connection: close"), std::string::npos) << headers;
    const auto j = json::parse(got.substr(got.find("\r\n\r\n") + 4));
    EXPECT_EQ(j.at("error").at("message"), "conflicting Content-Length headers ('" + len + "' and '9437184')");
    EXPECT_EQ(j.at("error").at("type"), "invalid_request_error");
  }
  // The same length twice is one length: served.
  expect_one_token_completion(exchange(server_->port(), head + "Content-Length: " + len + "\r\nContent-Length: " +
                                                          len + "\r\nConnection: close\r\n\r\n" + body));
}

// "Transfer-Encoding: Chunked" (transfer codings are case-insensitive, RFC 9112 7): httplib
// 0.11 reads a chunked body only for the lowercase value and cannot be patched here, so any
// other spelling is refused with a 400 naming the header (it was read as a body-less request,
// "malformed JSON body"), and a request carried in the chunks (a smuggling shape, here a GET
// /health) is not answered. Lowercase "chunked" is served.
TEST_F(ServeBodies, ATransferEncodingOtherThanLowercaseChunkedIsRefusedAndNothingIsSmuggled) {
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  const std::string smuggled = "\r\n\r\nGET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const std::string chunks = fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", smuggled.size(), smuggled);
  for (const std::string te : {"Chunked", "CHUNKED", "chunked, chunked"}) {
    SCOPED_TRACE(te);
    const std::string got = exchange(server_->port(), head + "Transfer-Encoding: " + te + "\r\n\r\n" + chunks);
    EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << got;
    // Any response on the connection is a 400; the smuggled GET was never served.
    EXPECT_EQ(count_of(got, "HTTP/1.1 "), count_of(got, "HTTP/1.1 400 Bad Request\r\n")) << got;
    EXPECT_EQ(got.find("\"status\":\"ok\""), std::string::npos) << got;
    const std::string first = got.substr(0, got.find("}}") + 2);
    const auto j = json::parse(first.substr(first.find("\r\n\r\n") + 4));
    EXPECT_EQ(j.at("error").at("message"),
              "unsupported Transfer-Encoding '" + te + "' (only 'chunked', in lowercase, is read)");
  }
  // Two Transfer-Encoding headers (httplib reads only the first): refused the same way.
  {
    const std::string got = exchange(server_->port(), head + "Transfer-Encoding: chunked\r\nTransfer-Encoding: "
                                                             "chunked\r\n\r\n" + chunks);
    EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << got;
    EXPECT_EQ(got.find("\"status\":\"ok\""), std::string::npos) << got;
    const std::string first = got.substr(0, got.find("}}") + 2);
    EXPECT_EQ(json::parse(first.substr(first.find("\r\n\r\n") + 4)).at("error").at("message"),
              "more than one Transfer-Encoding header (only a single 'Transfer-Encoding: chunked' is read)");
  }
  const std::string body = R"({"prompt":"Once upon","max_tokens":1})";
  expect_one_token_completion(exchange(server_->port(), head + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                                                          fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", body.size(), body)));
}

// A body that is not JSON: the 400 says where it stops being JSON, in the server's words, not
// nlohmann's exception text ("[json.exception.parse_error.101] ...").
TEST_F(ServeBodies, MalformedJsonSaysTheByteWithoutTheLibraryExceptionText) {
  expect_openai_error(curl("POST", server_->url("/v1/completions"), "{abc}"), 400,
                      "malformed JSON body: syntax error at byte 2 (invalid literal)");
  const auto r = curl("POST", server_->url("/v1/completions"), R"({"prompt": "x")");
  expect_openai_error(r, 400, "malformed JSON body: syntax error at byte 15 (unexpected end of input)");
  EXPECT_EQ(r.body.find("json.exception"), std::string::npos) << r.body;
}

// "Expect: 100-continue" with a Content-Length over the limit: the 413 (OpenAI error shape)
// comes at once and no "100 Continue" before it, so the client never uploads; within the
// limit the server does say "100 Continue" and then answers the body.
TEST_F(ServeBodies, Expect100ContinueOverTheLimitGets413WithoutContinue) {
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                           "Expect: 100-continue\r\n";
  const auto t0 = std::chrono::steady_clock::now();
  int fd = raw_connect_send(server_->port(), head + "Content-Length: 9437184\r\n\r\n");
  ASSERT_GE(fd, 0);
  const std::string got = read_until(fd, "}}", 5);
  close(fd);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0) << got;
  EXPECT_EQ(got.rfind("HTTP/1.1 413 Payload Too Large\r\n", 0), 0u) << got;
  EXPECT_EQ(got.find("100 Continue"), std::string::npos) << got;
  const auto j = nlohmann::json::parse(got.substr(got.find("\r\n\r\n") + 4));
  EXPECT_EQ(j.at("error").at("message"), "request body over the limit of 8388608 bytes");
  EXPECT_EQ(j.at("error").at("type"), "invalid_request_error");
  EXPECT_NE(got.find("Connection: close\r\n"), std::string::npos) << got;
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":1,"temperature":0})";
  fd = raw_connect_send(server_->port(), head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n");
  ASSERT_GE(fd, 0);
  EXPECT_EQ(read_until(fd, "\r\n\r\n", 5), "HTTP/1.1 100 Continue\r\n\r\n");
  ::send(fd, body.data(), body.size(), MSG_NOSIGNAL);
  const std::string ok = read_until(fd, "}}", 10);
  close(fd);
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
}

// An HTTP/1.0 request with "Connection: Keep-Alive": httplib would answer with a
// Keep-Alive header but no "Connection: keep-alive" (which such a client needs to reuse
// the connection), so the server closes it and says so; the client reading to the end of
// the stream gets the whole answer and the end (the connection ends right after a
// "Connection: close" response, docs/serving.md), never hangs.
TEST_F(ServeBodies, AnHttp10KeepAliveRequestGetsConnectionCloseAndTheStreamEnds) {
  const auto t0 = std::chrono::steady_clock::now();
  const int fd = raw_connect_send(server_->port(), "GET /health HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
  ASSERT_GE(fd, 0);
  const std::string got = read_until(fd, "\x01 never sent", 6);  // to the end of the stream
  close(fd);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4.0) << got;
  const std::string headers = got.substr(0, got.find("\r\n\r\n"));
  EXPECT_EQ(headers.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_NE(headers.find("Connection: close"), std::string::npos) << headers;
  EXPECT_EQ(headers.find("Keep-Alive"), std::string::npos) << headers;
  EXPECT_EQ(got.substr(got.find("\r\n\r\n") + 4), R"({"status":"ok"})");
}

TEST(ServeDisconnect, AHungUpNonStreamedRequestIsCancelledAndTheNextOneServed) {
  ServerProcess s({stories(), "--parallel", "1", "--queue", "0", "--ctx-size", "512", "--threads", "1",
                   "--test-step-delay-ms", "20"});
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  // 400 tokens x 20 ms = 8 s if it ran to the end.
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":400,"temperature":0})";
  const int fd = raw_connect_send(s.port(), post_request("/v1/completions", body));
  ASSERT_GE(fd, 0);
  double in_use = -1;
  for (int i = 0; i < 40 && in_use != 1; ++i) {  // running
    in_use = metric(curl("GET", s.url("/metrics")).body, "llmport_kv_cache_slots_in_use");
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_EQ(in_use, 1);
  close(fd);
  const auto t0 = std::chrono::steady_clock::now();
  std::string m;
  for (int i = 0; i < 100; ++i) {
    m = curl("GET", s.url("/metrics")).body;
    in_use = metric(m, "llmport_kv_cache_slots_in_use");
    if (in_use == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double freed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(in_use, 0) << m;
  EXPECT_LT(freed_s, 2.0);  // the check runs every 100 ms; the generation had 7 s to go
  EXPECT_LT(metric(m, "llmport_generated_tokens_total"), 200) << m;
  EXPECT_NE(m.find("llmport_requests_total{endpoint=\"/v1/completions\",status=\"499\"} 1"), std::string::npos) << m;
  // The one slot (queue 0) serves the next request: a 429 here would mean it leaked.
  const auto c = golden_case(1);
  const auto r = curl("POST", s.url("/v1/completions"),
                      json({{"prompt", c.at("prompt")}, {"max_tokens", c.at("n_steps")}, {"temperature", 0}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], c.at("completion_text"));
}

}  // namespace
}  // namespace llmport::test
