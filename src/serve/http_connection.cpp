#include "serve/http_connection.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

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

namespace {

using Clock = std::chrono::steady_clock;

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
// or `seconds` pass: closing a socket with unread bytes makes the kernel send a reset, which
// can destroy the response in the client's receive buffer before the client reads it.
void lingering_close(socket_t sock, time_t seconds) {
  shutdown(sock, SHUT_WR);
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  char buf[16384];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
    if (recv(sock, buf, sizeof buf, 0) <= 0) break;
  }
  close(sock);
}

}  // namespace

// httplib's Stream over one connection's socket, for all of its requests (bytes read ahead
// belong to the next request). See the header for what it does differently.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(socket_t sock, int read_timeout_ms, int write_timeout_ms)
      : sock_(sock), read_ms_(read_timeout_ms), write_ms_(write_timeout_ms) {}

  /// The next request's bytes go to `r` until its header section ends.
  void begin_request(RequestReading& r) {
    req_ = &r;
    in_head_ = true;
    in_request_line_ = true;
    line_len_ = 0;
    header_bytes_ = 0;
  }
  void end_request() { req_ = nullptr; }
  bool has_buffered() const { return pos_ < len_; }

  bool is_readable() const override { return has_buffered() || wait(POLLIN, read_ms_); }
  bool is_writable() const override { return wait(POLLOUT, write_ms_); }

  ssize_t read(char* ptr, std::size_t size) override {
    if (!has_buffered() && !fill()) return eof_ ? 0 : -1;
    std::size_t n = std::min(size, len_ - pos_);
    if (in_head_) n = take_head(ptr, n);
    else std::memcpy(ptr, buf_ + pos_, n);
    if (n == 0 && req_ && req_->headers_too_large) return -1;
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, std::size_t size) override {
    if (!is_writable()) return -1;
    const ssize_t n = send(sock_, ptr, size, MSG_NOSIGNAL);
    return n < 0 && errno == EINTR ? 0 : n;
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

  bool fill() {
    pos_ = len_ = 0;
    if (!wait(POLLIN, read_ms_)) return false;
    ssize_t n;
    while ((n = recv(sock_, buf_, sizeof buf_, 0)) < 0 && errno == EINTR) {
    }
    if (n == 0) eof_ = true;
    if (n <= 0) return false;
    len_ = static_cast<std::size_t>(n);
    return true;
  }

  // Up to n header-section bytes into ptr, stopping after the blank line that ends it, or
  // at a header line / section over its limit (flagged; the read then fails).
  std::size_t take_head(char* ptr, std::size_t n) {
    std::size_t i = 0;
    for (; i < n && in_head_; ++i) {
      const char c = buf_[pos_ + i];
      if (!in_request_line_ && (++header_bytes_ > kMaxHeaderBytes || line_len_ + 1 > kMaxHeaderLineBytes)) {
        if (req_) req_->headers_too_large = true;
        break;
      }
      ptr[i] = c;
      if (req_ && (!in_request_line_ || req_->raw_head.size() <= kMaxRequestLineBytes)) req_->raw_head += c;
      ++line_len_;
      const bool after_cr = prev_cr_;
      prev_cr_ = c == '\r';
      if (c != '\n') continue;
      if (!in_request_line_ && line_len_ == 2 && after_cr) {  // exactly "\r\n", as httplib's end
        in_head_ = false;
        if (req_) req_->head_complete = true;
      }
      in_request_line_ = false;
      line_len_ = 0;
    }
    return i;
  }

  socket_t sock_;
  int read_ms_, write_ms_;
  char buf_[4096];
  std::size_t pos_ = 0, len_ = 0;
  bool eof_ = false;
  RequestReading* req_ = nullptr;
  bool in_head_ = false, in_request_line_ = false, prev_cr_ = false;
  std::size_t line_len_ = 0, header_bytes_ = 0;
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

bool HttpServer::process_and_close_socket(socket_t sock) {
  ConnectionStream strm(sock, poll_ms(read_timeout_sec_, read_timeout_usec_),
                        poll_ms(write_timeout_sec_, write_timeout_usec_));
  bool ret = false, linger = false;
  for (std::size_t left = keep_alive_max_count_; left > 0 && wait_for_request(strm); --left) {
    RequestReading r;
    r.socket = sock;
    strm.begin_request(r);
    g_current = &r;
    bool closed = false;
    ret = process_request(strm, left == 1, closed, nullptr);
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
  }
  if (linger) {
    lingering_close(sock, keep_alive_timeout_sec_);
  } else {
    shutdown(sock, SHUT_RDWR);
    close(sock);
  }
  return ret;
}

}  // namespace llmport::serve
