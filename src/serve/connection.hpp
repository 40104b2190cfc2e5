#pragma once
// The client socket of an HTTP request, to notice a client that hung up while its
// non-streamed answer is still being generated. cpp-httplib 0.11 does not hand its handlers
// the socket (later versions have Request::is_connection_closed), so it is found among this
// process's sockets by the request's 4-tuple: unique while the handler runs, since httplib
// closes the socket only after the handler returns.
#include <string>

namespace llmport::serve {

/// The connected TCP socket whose local end is local_port and whose peer is
/// remote_addr:remote_port (numeric address, as httplib reports it); -1 if none.
int find_connection_socket(int local_port, const std::string& remote_addr, int remote_port);

/// True when the peer of socket `fd` has closed or reset the connection (a readable socket
/// that peeks zero bytes or an error), as httplib's own is_socket_alive decides. Does not
/// block and does not consume data.
bool peer_closed(int fd);

}  // namespace llmport::serve
