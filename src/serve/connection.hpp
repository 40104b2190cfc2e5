#pragma once
// Whether the client of a request whose non-streamed answer is still being generated is
// still there. Its socket comes from the connection loop (serve/http_connection.hpp).
//
// TCP cannot tell a client that closed its socket from one that only half-closed it
// (shutdown(SHUT_WR), `nc -N`) and still reads: both are a FIN. A write tells them apart: a
// closed socket answers it with a reset. So at the first FIN an HTTP/1.1 request's handler
// writes an interim "100 Continue" (RFC 9110 15.2: a client must parse 1xx responses it did
// not ask for) and cancels only on the reset. An HTTP/1.0 client may get no 1xx: its probe
// is the first bytes of its own response, "HTTP/1.1 " (send_response_prefix,
// serve/http_connection.hpp), the rest following when the answer is ready.
#include <functional>

namespace llmport::serve {

enum class PeerState {
  Open,        ///< nothing to read, or bytes of a next request
  HalfClosed,  ///< FIN: the client closed, or only shut down its sending side
  Gone,        ///< reset or socket error
};

/// The state of the peer of socket `fd`. Does not block and does not consume data.
PeerState peer_state(int fd);

/// Whether the client of socket `fd` is gone: a reset or socket error is; at the first FIN
/// (`probed` false) `probe` writes something the client tolerates and its failure is, the
/// reset to that write showing on a later call. Sets `probed` once it probed.
bool client_gone(int fd, bool& probed, const std::function<bool()>& probe);

/// Writes the interim response "HTTP/1.1 100 Continue" to `fd`; false if the write fails.
bool send_interim_continue(int fd);

}  // namespace llmport::serve
