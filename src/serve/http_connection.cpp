#include "serve/http_connection.hpp"

#include "serve/chunked_framing.hpp"
#include "serve/connection_pool.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "llmport/file_io.hpp"

namespace llmport::serve {

namespace {
// The request the calling thread's connection loop is in (httplib runs a connection's
// parser, handlers and writes on the one pool thread that took it).
thread_local RequestReading* g_current = nullptr;
}  // namespace

RequestReading* current_request() { return g_current; }

void close_connection_after_response() {
  if (g_current) g_current->close_after = true;
}

std::vector<std::string> raw_header_lines(const std::string& raw_head) {
  std::vector<std::string> out;
  std::size_t pos = raw_head.find('\n');  // the request line is not a header
  while (pos != std::string::npos && pos + 1 < raw_head.size()) {
    const std::size_t begin = pos + 1;
    pos = raw_head.find('\n', begin);
    std::string line = raw_head.substr(begin, pos == std::string::npos ? std::string::npos : pos - begin);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(std::move(line));
  }
  return out;
}

std::vector<std::string> raw_header_values(const std::string& raw_head, const std::string& name) {
  std::vector<std::string> out;
  for (const std::string& line : raw_header_lines(raw_head)) {
    const std::size_t colon = line.find(':');
    if (colon != name.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < colon && same; ++i)
      same = std::tolower(static_cast<unsigned char>(line[i])) == std::tolower(static_cast<unsigned char>(name[i]));
    if (!same) continue;
    const std::size_t b = line.find_first_not_of(" \t", colon + 1);
    const std::size_t e = line.find_last_not_of(" \t\r");
    out.push_back(b == std::string::npos || e < b ? std::string() : line.substr(b, e - b + 1));
  }
  return out;
}

bool send_response_prefix(RequestReading& r) {
  const std::size_t len = sizeof kResponsePrefix - 1;
  if (r.socket < 0 || send(r.socket, kResponsePrefix, len, MSG_NOSIGNAL) != static_cast<ssize_t>(len)) return false;
  r.response_prefix_sent = len;
  return true;
}

std::string header_syntax_error(const std::string& raw_head) {
  std::size_t pos = raw_head.find('\n');  // the request line is httplib's to split
  // ... but httplib keeps a CR inside it as part of the target ("/health\r"; a NUL there
  // it refuses itself).
  const std::string request_line = raw_head.substr(0, pos == std::string::npos ? raw_head.size() : pos);
  const std::size_t rl_cr = request_line.find('\r');
  if (rl_cr != std::string::npos && rl_cr + 1 != request_line.size()) return "a CR inside the request line";
  while (pos != std::string::npos && pos + 1 < raw_head.size()) {
    const std::size_t begin = pos + 1;
    pos = raw_head.find('\n', begin);
    const std::string line = raw_head.substr(begin, pos == std::string::npos ? std::string::npos : pos - begin);
    if (line == "\r") break;  // the blank line ending the section
    const std::string name = printable(line.substr(0, line.find_first_of(":\r")));
    if (line[0] == ' ' || line[0] == '\t') return "obs-fold (a header line starting with a space or tab) is not accepted";
    if (line.find('\0') != std::string::npos) return "a NUL byte in the header '" + name + "'";
    const std::size_t cr = line.find('\r');
    if (pos != std::string::npos && cr == std::string::npos)
      return "a header line ending in a bare LF (not CRLF): '" + printable(line.substr(0, line.find(':'))) + "'";
    if (cr != std::string::npos && cr + 1 != line.size()) return "a CR not followed by LF in the header '" + name + "'";
    const std::size_t colon = line.find(':');
    // RFC 9112 5.1: field-line = field-name ":" ...; httplib dropped a line without one.
    if (colon == std::string::npos) return "a header line without a colon: '" + name + "'";
    if (colon == 0) return "a header line with an empty name";
    if (colon != std::string::npos && colon > 0 && (line[colon - 1] == ' ' || line[colon - 1] == '\t'))
      return "whitespace between the header name '" + printable(line.substr(0, line.find_first_of(" \t"))) +
             "' and its colon";
  }
  return "";
}

std::string unimplemented_method(const std::string& raw_head) {
  const std::string line = raw_head.substr(0, raw_head.find_first_of("\r\n"));
  const std::size_t a = line.find(' '), b = a == std::string::npos ? a : line.find(' ', a + 1);
  if (a == 0 || b == std::string::npos || b == a + 1 || line.find(' ', b + 1) != std::string::npos) return "";
  if (line.compare(b + 1, 7, "HTTP/1.") != 0) return "";
  const std::string method = line.substr(0, a);
  // RFC 9110 5.6.2 tchar
  const auto tchar = [](unsigned char c) { return std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c); };
  if (!std::all_of(method.begin(), method.end(), [&](char c) { return c != 0 && tchar(static_cast<unsigned char>(c)); }))
    return "";
  // The methods httplib routes; it answers TRACE and CONNECT 400 too (no handler exists).
  for (const char* known : {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
    if (method == known) return "";
  return method;
}

namespace {

using Clock = std::chrono::steady_clock;

// Before routing (httplib's setup_request hook): an absolute-form target is routed by its
// path (httplib takes all of "http://host:port/health" as the path), "" being "/"; an
// HTTP/1.0 request's Expect is dropped, as httplib would answer it "100 Continue"; a Range
// is ignored (RFC 9110 14.2: only GET has ranges, and a server may ignore them there too).
// httplib applied it to every answer: a POST generation came back as a 206 of its first
// bytes (or multipart/byteranges, or a 416 with an invalid Content-Range), the rest of the
// generated text thrown away.
void prepare_request(httplib::Request& req) {
  if (req.version == "HTTP/1.0") req.headers.erase("Expect");
  req.ranges.clear();
  req.headers.erase("Range");
  const std::size_t sep = req.path.find("://");
  if (sep == std::string::npos || req.path[0] == '/') return;
  std::string scheme = req.path.substr(0, sep);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "http" && scheme != "https") return;
  const std::size_t slash = req.path.find('/', sep + 3);
  req.path = slash == std::string::npos ? "/" : req.path.substr(slash);
}

int poll_ms(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

bool numeric_endpoint(const sockaddr_storage& a, socklen_t len, std::string& ip, int& port) {
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, h, sizeof h, s, sizeof s,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  ip = h;
  port = std::atoi(s);
  return true;
}

// FIN to the client, then the unread rest of its request read and dropped until it closes
// or `ms` pass: closing a socket with unread bytes makes the kernel send a reset, which
// can destroy the response in the client's receive buffer before the client reads it.
// The pool may end the drain early (connection_phase: Waiting) for a connection that needs
// the thread.
void lingering_close(socket_t sock, long long ms) {
  connection_phase(ConnPhase::Waiting, sock);
  shutdown(sock, SHUT_WR);
  const auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  char buf[16384];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
    if (recv(sock, buf, sizeof buf, 0) <= 0) break;
  }
  connection_phase(ConnPhase::Waiting, -1);
  close(sock);
}

}  // namespace

// httplib's Stream over one connection's socket, for all of its requests (bytes read ahead
// belong to the next request). See the header for what it does differently.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(socket_t sock, int read_timeout_ms, int write_timeout_ms)
      : sock_(sock), read_ms_(read_timeout_ms), write_ms_(write_timeout_ms) {}

  /// The next request's bytes go to `r` until its header section ends, which must be within
  /// the read timeout from now (its first byte is there, or about to be).
  void begin_request(RequestReading& r) {
    req_ = &r;
    in_head_ = true;
    in_request_line_ = true;
    line_len_ = 0;
    header_bytes_ = 0;
    leading_blank_ = 0;
    head_deadline_ = Clock::now() + std::chrono::milliseconds(read_ms_);
    framing_ = ChunkedFraming();
  }
  void end_request() { req_ = nullptr; }
  bool has_buffered() const { return pos_ < len_; }

  bool is_readable() const override { return has_buffered() || wait(POLLIN, read_ms_); }
  bool is_writable() const override { return wait(POLLOUT, write_ms_); }

  ssize_t read(char* ptr, std::size_t size) override {
    if (size == 0) return 0;
    for (;;) {  // until a byte is handed on: a trailer field's bytes are dropped
      if (!has_buffered() && !fill()) return eof_ ? 0 : -1;
      const std::size_t n = std::min(size, len_ - pos_);
      const std::size_t got = in_head_ ? take_head(ptr, n) : chunked() ? take_chunked(ptr, n) : take_plain(ptr, n);
      if (got > 0) return static_cast<ssize_t>(got);
      if (req_ && (req_->headers_too_large || req_->body_malformed)) return -1;
    }
  }

  // All of it (httplib writes a response head with one call and does not look at the
  // count); the first bytes of the status line left out when a half-close probe sent them.
  ssize_t write(const char* ptr, std::size_t size) override {
    std::size_t skip = 0;
    if (req_ && req_->response_prefix_sent > 0) {
      skip = std::min(req_->response_prefix_sent, size);
      req_->response_prefix_sent = 0;
      if (std::memcmp(ptr, kResponsePrefix, skip) != 0) skip = 0;  // not a status line: cannot be
    }
    std::size_t off = skip;
    while (off < size) {
      if (!is_writable()) return -1;
      const ssize_t n = send(sock_, ptr + off, size - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return -1;
      off += static_cast<std::size_t>(n);
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (getpeername(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) numeric_endpoint(a, len, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (getsockname(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) numeric_endpoint(a, len, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  // Writes fail on an error or a reset, not on the peer's FIN (a half-closed client still
  // reads); reads wait at most the read timeout, flagged on the request when they time out.
  bool wait(short events, int ms) const {
    pollfd p{sock_, events, 0};
    int r;
    while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR) {
    }
    if (r == 0 && (events & POLLIN) && req_) req_->read_timed_out = true;
    if (r <= 0) return false;
    if (events & POLLIN) return true;  // data, FIN or an error: recv says which
    return (p.revents & (POLLERR | POLLNVAL)) == 0 && (p.revents & POLLOUT);
  }

  // The read timeout bounds each wait; in the header section also the whole section (else
  // a client trickling a byte per read timeout holds its pool thread for ever: Slowloris).
  bool fill() {
    pos_ = len_ = 0;
    int ms = read_ms_;
    if (in_head_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(head_deadline_ - Clock::now()).count();
      if (left <= 0) {
        if (req_) req_->read_timed_out = true;
        return false;
      }
      ms = static_cast<int>(std::min<long long>(left, read_ms_));
    }
    if (!wait(POLLIN, ms)) return false;
    ssize_t n;
    while ((n = recv(sock_, buf_, sizeof buf_, 0)) < 0 && errno == EINTR) {
    }
    if (n == 0) eof_ = true;
    if (n <= 0) return false;
    len_ = static_cast<std::size_t>(n);
    return true;
  }

  // Up to n header-section bytes into ptr, stopping after the blank line that ends it, or
  // at a header line / section over its limit (flagged; the read then fails). Empty lines
  // before the request line (a few bytes of CR and LF) are dropped: RFC 9112 2.2 says to
  // ignore at least one (some clients send a CRLF after a POST body; httplib answered 400).
  std::size_t take_head(char* ptr, std::size_t n) {
    std::size_t i = 0, o = 0;
    for (; i < n && in_head_; ++i) {
      const char c = buf_[pos_ + i];
      if (in_request_line_ && line_len_ == 0 && (c == '\r' || c == '\n') && leading_blank_ < kMaxLeadingBlankBytes) {
        ++leading_blank_;
        continue;
      }
      if (!in_request_line_ && (++header_bytes_ > kMaxHeaderBytes || line_len_ + 1 > kMaxHeaderLineBytes)) {
        if (req_) req_->headers_too_large = true;
        break;
      }
      ptr[o++] = c;
      if (req_ && (!in_request_line_ || req_->raw_head.size() <= kMaxRequestLineBytes)) req_->raw_head += c;
      ++line_len_;
      const bool after_cr = prev_cr_;
      prev_cr_ = c == '\r';
      if (c != '\n') continue;
      if (!in_request_line_ && line_len_ == 2 && after_cr) {  // exactly "\r\n", as httplib's end
        in_head_ = false;
        if (req_) req_->head_complete = true;
        connection_phase(ConnPhase::Handling, sock_);  // the pool no longer ends it
      }
      in_request_line_ = false;
      line_len_ = 0;
    }
    pos_ += i;
    return o;
  }

  std::size_t take_plain(char* ptr, std::size_t n) {
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    return n;
  }

  // A chunked body being read (set by the handler that reads it): checked and its trailer
  // fields dropped (serve/chunked_framing.hpp) until its end; the bytes after it are the
  // next request's.
  bool chunked() const { return req_ && req_->chunked_body && !framing_.done(); }

  std::size_t take_chunked(char* ptr, std::size_t n) {
    std::size_t out = 0;
    while (out < n && pos_ < len_ && !framing_.done()) {
      if (const std::size_t data = framing_.data_left()) {
        const std::size_t k = std::min({data, n - out, len_ - pos_});
        std::memcpy(ptr + out, buf_ + pos_, k);
        framing_.took_data(k);
        pos_ += k;
        out += k;
        continue;
      }
      const char c = buf_[pos_];
      const ChunkedFraming::Byte b = framing_.next(c);
      if (b == ChunkedFraming::Byte::Bad) {
        req_->body_malformed = true;
        break;
      }
      ++pos_;
      if (b == ChunkedFraming::Byte::Pass) ptr[out++] = c;
    }
    return out;
  }

  socket_t sock_;
  int read_ms_, write_ms_;
  char buf_[4096];
  std::size_t pos_ = 0, len_ = 0;
  bool eof_ = false;
  RequestReading* req_ = nullptr;
  bool in_head_ = false, in_request_line_ = false, prev_cr_ = false;
  std::size_t line_len_ = 0, header_bytes_ = 0, leading_blank_ = 0;
  static constexpr std::size_t kMaxLeadingBlankBytes = 16;
  Clock::time_point head_deadline_;
  ChunkedFraming framing_;
};

// httplib's keep-alive wait (the next request's first byte within the keep-alive timeout),
// looking every 50 ms whether the server is stopping.
bool HttpServer::wait_for_request(ConnectionStream& strm) const {
  if (strm.has_buffered()) return true;
  const auto deadline = Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
  while (svr_sock_ != INVALID_SOCKET) {
    pollfd p{strm.socket(), POLLIN, 0};
    const int r = poll(&p, 1, 50);
    if (r > 0) return true;
    if ((r < 0 && errno != EINTR) || Clock::now() >= deadline) return false;
  }
  return false;
}

void HttpServer::widen_listen_backlog() {
  if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, SOMAXCONN);  // Linux: updates the backlog
}

void HttpServer::set_max_connections(std::size_t n) {
  max_connections_ = n;
  new_task_queue = [n] { return new ConnectionPool(n); };
}

// A connection for which the pool had no thread (every one answering a request): 503 at
// once, with a short drain of what the client sent so far.
void HttpServer::refuse_connection(socket_t sock) const {
  const std::string body =
      own_error_body_ ? own_error_body_(503, "the server is at its limit of " + std::to_string(max_connections_) +
                                                 " connections answering requests; retry later")
                      : std::string();
  const std::string msg = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n"
                          "Content-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  send(sock, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  lingering_close(sock, 200);
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  if (connection_refused()) {
    refuse_connection(sock);
    return false;
  }
  ConnectionStream strm(sock, poll_ms(read_timeout_sec_, read_timeout_usec_),
                        poll_ms(write_timeout_sec_, write_timeout_usec_));
  bool ret = false, linger = false;
  connection_phase(ConnPhase::Waiting, sock);
  for (std::size_t left = keep_alive_max_count_; left > 0 && wait_for_request(strm); --left) {
    RequestReading r;
    r.socket = sock;
    strm.begin_request(r);
    g_current = &r;
    bool closed = false;
    ret = process_request(strm, left == 1, closed, prepare_request);
    g_current = nullptr;
    strm.end_request();
    // httplib answers nothing when the request line itself did not arrive in time.
    if (!ret && r.read_timed_out && !r.raw_head.empty() && !r.head_complete && own_error_body_) {
      const std::string body = own_error_body_(408, "request not received within the read timeout of " +
                                                        std::to_string(read_timeout_sec_) + " s");
      const std::string msg = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
      strm.write(msg.data(), msg.size());
      r.close_after = true;
    }
    linger = r.close_after;
    if (!ret || closed || r.close_after) break;
    connection_phase(ConnPhase::Waiting, sock);  // idle until the next request
  }
  if (linger) {
    lingering_close(sock, keep_alive_timeout_sec_ * 1000);
  } else {
    connection_phase(ConnPhase::Waiting, -1);
    shutdown(sock, SHUT_RDWR);
    close(sock);
  }
  return ret;
}

}  // namespace llmport::serve
