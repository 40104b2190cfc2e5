#include "serve/connection.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace llmport::serve {

PeerState peer_state(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return PeerState::Open;  // nothing to read: still connected
  if (p.revents & (POLLERR | POLLNVAL)) return PeerState::Gone;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? PeerState::Open : PeerState::Gone;
  return n == 0 ? PeerState::HalfClosed : PeerState::Open;
}

bool client_gone(int fd, bool& probed, const std::function<bool()>& probe) {
  const PeerState ps = peer_state(fd);
  if (ps != PeerState::HalfClosed || probed) return ps == PeerState::Gone;
  probed = true;
  return !probe();
}

bool send_interim_continue(int fd) {
  static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
  return send(fd, kContinue, std::strlen(kContinue), MSG_NOSIGNAL) == static_cast<ssize_t>(std::strlen(kContinue));
}

}  // namespace llmport::serve
