#include "serve/connection.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

namespace llmport::serve {
namespace {

bool numeric_endpoint(const sockaddr_storage& a, socklen_t len, std::string& host, int& port) {
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, h, sizeof h, s, sizeof s,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  port = std::atoi(s);
  return true;
}

// getsockname fails (ENOTSOCK) on any descriptor that is not a socket, so no fstat first:
// ThreadSanitizer orders fstat against a close() of the same number in another thread, and
// clang 14's runtime crashed building that report (a CHECK in AddLocation) under the load test.
bool matches(int fd, int local_port, const std::string& remote_addr, int remote_port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  std::string host;
  int port = -1;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || !numeric_endpoint(a, len, host, port) ||
      port != local_port)
    return false;
  len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || !numeric_endpoint(a, len, host, port))
    return false;
  return port == remote_port && host == remote_addr;
}

}  // namespace

int find_connection_socket(int local_port, const std::string& remote_addr, int remote_port) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    char* end = nullptr;
    const std::string name = e.path().filename().string();
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (end && *end == '\0' && matches(static_cast<int>(fd), local_port, remote_addr, remote_port))
      return static_cast<int>(fd);
  }
  return -1;
}

bool peer_closed(int fd) {
  pollfd p{fd, POLLIN, 0};
  const int r = poll(&p, 1, 0);
  if (r <= 0) return false;  // nothing to read: still connected
  if (p.revents & (POLLERR | POLLNVAL)) return true;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset
  return n == 0;  // FIN
}

}  // namespace llmport::serve
