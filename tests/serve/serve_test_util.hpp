#pragma once
// Helpers of the server tests: a `llmport serve` child process on a free loopback port
// (--port 0; the port is read from its "listening on" line), real clients (curl, node) run
// as child processes, and a raw socket for abrupt disconnects. Every wait is bounded.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace llmport::test {

struct ProcResult {
  int exit_code = -1;
  std::string out, err;
};

/// Runs argv[0] (found on PATH) with args, stdin text; waits for it.
inline ProcResult run_program(const std::vector<std::string>& argv, const std::string& stdin_text = "") {
  // Tests call this from several threads at once: the pipes are close-on-exec (a sibling
  // child must not inherit them) and the child only calls async-signal-safe functions (no
  // allocation between fork and exec).
  int in_p[2], out_p[2], err_p[2];
  if (pipe2(in_p, O_CLOEXEC) || pipe2(out_p, O_CLOEXEC) || pipe2(err_p, O_CLOEXEC))
    throw std::runtime_error("pipe failed");
  std::vector<std::string> copy = argv;
  std::vector<char*> av;
  for (auto& a : copy) av.push_back(a.data());
  av.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in_p[0], 0);
    dup2(out_p[1], 1);
    dup2(err_p[1], 2);
    execvp(av[0], av.data());
    _exit(127);
  }
  close(in_p[0]);
  close(out_p[1]);
  close(err_p[1]);
  std::thread writer([&] {
    std::size_t off = 0;
    while (off < stdin_text.size()) {
      const ssize_t n = ::write(in_p[1], stdin_text.data() + off, stdin_text.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    close(in_p[1]);
  });
  auto slurp = [](int fd) {
    std::string s;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      s.append(buf, static_cast<std::size_t>(n));
    }
    close(fd);
    return s;
  };
  ProcResult r;
  std::thread err_reader([&] { r.err = slurp(err_p[0]); });
  r.out = slurp(out_p[0]);
  err_reader.join();
  writer.join();
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// One HTTP exchange through curl.
struct HttpResult {
  int status = 0;
  std::string body;
  std::string headers;
};

/// curl -sS -X METHOD URL [-H ...] [--data-binary @-] (body on stdin), bounded by --max-time.
inline HttpResult curl(const std::string& method, const std::string& url, const std::string& body = "",
                       const std::vector<std::string>& headers = {}, int max_time_s = 120) {
  std::vector<std::string> argv = {"curl", "-sS", "-N", "-X", method, url, "-D", "/dev/stderr",
                                   "-o", "-", "--max-time", std::to_string(max_time_s), "-w", "\n%{http_code}"};
  for (const auto& h : headers) {
    argv.push_back("-H");
    argv.push_back(h);
  }
  if (!body.empty() || method == "POST") {
    argv.push_back("-H");
    argv.push_back("Content-Type: application/json");
    argv.push_back("--data-binary");
    argv.push_back("@-");
  }
  const auto r = run_program(argv, body);
  HttpResult h;
  const auto nl = r.out.rfind('\n');
  if (nl == std::string::npos) return h;
  h.status = std::atoi(r.out.c_str() + nl + 1);
  h.body = r.out.substr(0, nl);
  h.headers = r.err;
  return h;
}

/// `data: ` payloads of an SSE body, in order ("[DONE]" included).
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const auto end = body.find("\n\n", pos);
    const std::string ev = body.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (ev.rfind("data: ", 0) == 0) out.push_back(ev.substr(6));
    if (end == std::string::npos) break;
    pos = end + 2;
  }
  return out;
}

/// A `llmport serve` child process.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> args) {
    args.insert(args.begin(), "serve");
    args.push_back("--port");
    args.push_back("0");
    int out_p[2];
    if (pipe2(out_p, O_CLOEXEC)) throw std::runtime_error("pipe failed");
    err_path_ = std::filesystem::temp_directory_path() /
                ("llmport-serve-" + std::to_string(getpid()) + "-" + std::to_string(counter()++) + ".log");
    std::string bin = LLMPORT_BIN;
    std::vector<char*> av{bin.data()};
    for (auto& a : args) av.push_back(a.data());
    av.push_back(nullptr);
    const std::string err_file = err_path_.string();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out_p[1], 1);
      const int ef = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (ef >= 0) dup2(ef, 2);
      execv(av[0], av.data());
      _exit(127);
    }
    close(out_p[1]);
    out_fd_ = out_p[0];
    // "listening on http://127.0.0.1:PORT" within 60 s.
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_fd_, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char c[256];
      const ssize_t n = ::read(out_fd_, c, sizeof c);
      if (n <= 0) break;
      line.append(c, static_cast<std::size_t>(n));
    }
    first_line_ = line.substr(0, line.find('\n'));
    const auto colon = first_line_.rfind(':');
    if (first_line_.rfind("listening on http://", 0) == 0 && colon != std::string::npos)
      port_ = std::atoi(first_line_.c_str() + colon + 1);
  }
  ~ServerProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    std::error_code ec;
    std::filesystem::remove(err_path_, ec);
  }
  int port() const { return port_; }
  const std::string& first_line() const { return first_line_; }
  std::string url(const std::string& path = "") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::string stderr_text() const { return read_file(err_path_); }
  pid_t pid() const { return pid_; }
  /// Polls /health until 200 (bounded); false on timeout.
  bool wait_ready(int seconds = 120) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      if (curl("GET", url("/health"), "", {}, 5).status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  /// Sends `sig` and waits up to `seconds` for the exit; its exit code, or -1 on timeout.
  int signal_and_wait(int sig, int seconds) {
    kill(pid_, sig);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int port_ = 0;
  bool exited_ = false;
  std::string first_line_;
  std::filesystem::path err_path_;
};

/// Value of one un-labelled sample of the Prometheus text, -1 if absent.
inline double metric(const std::string& text, const std::string& name) {
  std::size_t pos = 0;
  while ((pos = text.find(name + " ", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') return std::atof(text.c_str() + pos + name.size() + 1);
    pos += name.size();
  }
  return -1;
}

// Polls /metrics (every 20 ms, up to 10 s) until `name` reads `value` (or, `above`, more).
inline bool wait_metric(const ServerProcess& s, const std::string& name, double value, bool above = false) {
  for (int i = 0; i < 500; ++i) {
    const double v = metric(curl("GET", s.url("/metrics")).body, name);
    if (above ? v > value : v == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

/// Opens a loopback TCP connection and sends `request` raw; returns the fd (-1 on failure).
inline int raw_connect_send(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  std::size_t off = 0;
  while (off < request.size()) {
    const ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  return fd;
}

/// Reads from fd until `needle` appears or `seconds` pass; returns what was read.
inline std::string read_until(int fd, const std::string& needle, int seconds) {
  std::string s;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (s.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    s.append(buf, static_cast<std::size_t>(n));
  }
  return s;
}

/// What a connection carries until the server ends it; `ended` false when it was still
/// open after the time given.
struct Received {
  std::string bytes;
  bool ended = false;
};

/// Reads `fd` until the server ends the connection or `seconds` pass; closes `fd`.
inline Received receive_to_end(int fd, int seconds) {
  Received r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) {
      r.ended = true;
      break;
    }
    r.bytes.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return r;
}

/// Sends `request` on a fresh connection (then, with half_close, shutdown(SHUT_WR) as
/// `nc -N` does) and reads what comes back until the end, `seconds` at most.
inline Received exchange(int port, const std::string& request, bool half_close = false, int seconds = 8) {
  const int fd = raw_connect_send(port, request);
  if (fd < 0) return {};
  if (half_close) shutdown(fd, SHUT_WR);
  return receive_to_end(fd, seconds);
}

/// Occurrences of `part` in `s` (e.g. "HTTP/1.1 ": the responses on a connection).
inline std::size_t count_of(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (auto p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

/// The stories260K model directory and its golden cases (shared data).
inline std::string stories() { return shared_path("models/stories260K").string(); }
inline nlohmann::json golden_case(std::size_t i) {
  std::ifstream f(shared_path("models/stories260K/golden/public.json"));
  return nlohmann::json::parse(f).at("cases").at(i);
}

inline std::string post_request(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace llmport::test
