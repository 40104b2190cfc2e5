#pragma once
// llmport's own connection loop under cpp-httplib 0.11's request parser and router.
//
// httplib's socket stream (compiled into Debian's libcpp-httplib, not patchable here) checks
// before every write that the peer has not sent FIN (is_socket_alive's peek), so a client
// that half-closes after its request (shutdown(SHUT_WR), `nc -N`) never gets its answer; it
// gives handlers no way to end a connection; it drops header lines with an empty value
// ("Transfer-Encoding:") before any handler sees them; and a read timeout is a plain read
// failure. HttpServer overrides the one hook httplib offers for this (the virtual
// process_and_close_socket) and runs the protected process_request over its own Stream:
//  - writes fail only on a socket error, not on the peer's FIN;
//  - the header section is bounded (a line over kMaxHeaderLineBytes, or more than
//    kMaxHeaderBytes in all, fails the read and is flagged: answered 431) and kept raw;
//  - the header section must arrive whole within the read timeout of its first byte (not
//    only each next byte within it: a client trickling its headers held a pool thread for
//    ever); a read that times out is flagged (answered 408);
//  - a chunked body is checked strictly and its trailer fields dropped on the way to
//    httplib's chunked reader (serve/chunked_framing.hpp; flagged when malformed: 400);
//  - before routing, an absolute-form target ("GET http://host/health", RFC 9112 3.2.2)
//    is routed by its path, and an HTTP/1.0 request's "Expect" is dropped (RFC 9110 10.1.1:
//    no "100 Continue" for it; httplib wrote one);
//  - a response marked with close_connection_after_response() ends the connection at once,
//    with a lingering close (FIN, then the unread rest of the request drained for a bounded
//    time) so the client reads the response rather than a reset.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <httplib.h>

namespace llmport::serve {

/// httplib's own limit on a request line (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH; above: 414).
inline constexpr std::size_t kMaxRequestLineBytes = CPPHTTPLIB_REQUEST_URI_MAX_LENGTH;
/// One header line, CRLF included (httplib's CPPHTTPLIB_HEADER_MAX_LENGTH); above: 431.
inline constexpr std::size_t kMaxHeaderLineBytes = CPPHTTPLIB_HEADER_MAX_LENGTH;
/// The header lines of one request together (the request line not counted); above: 431.
inline constexpr std::size_t kMaxHeaderBytes = 64 * 1024;

/// What the connection layer saw of the request being handled on this thread.
struct RequestReading {
  int socket = -1;                 ///< the connection's socket (httplib hands handlers none)
  std::string raw_head;            ///< request line and header lines as received (bounded)
  bool head_complete = false;      ///< the blank line ending the header section was read
  bool headers_too_large = false;  ///< a header line or the header section over its limit
  bool read_timed_out = false;     ///< a read waited the whole read timeout (or the head's)
  bool chunked_body = false;       ///< set by the handler about to read a chunked body
  bool body_malformed = false;     ///< the chunked body broke the chunked coding
  std::size_t response_prefix_sent = 0;  ///< bytes of kResponsePrefix sent (send_response_prefix)
  bool close_after = false;        ///< the connection ends after this response
  /// The status the request counts as in the metrics when its status line no longer says
  /// it (0 = the status line's): a stream whose client went away (499) or that ended with
  /// an error event (its status); the 200 was sent before either was known.
  int metrics_status = 0;
};

/// How every response this server writes begins (httplib writes "HTTP/1.1 %d %s").
inline constexpr char kResponsePrefix[] = "HTTP/1.1 ";

/// Writes the first bytes of the response to `r` (kResponsePrefix) now, before the response
/// is ready; the connection then leaves them out of the response's head. A write the client
/// answers with a reset: an HTTP/1.0 handler's way to tell a client that closed from one that
/// only half-closed (serve/connection.hpp). False if the write fails.
bool send_response_prefix(RequestReading& r);

/// What RFC 9112 5.1/5.2 / RFC 9110 5.5 say to answer 400 in a raw header section, "" if
/// none: a CR inside the request line, obs-fold (a line starting with SP or HTAB), a line
/// without a colon or with an empty name, a NUL or a CR not before LF, a line ending in
/// a bare LF (httplib drops such a line; a front end may read it as two), whitespace between
/// a field name and its colon (5.1: httplib drops such a line, so "Content-Length : N" would
/// leave a body unread). The message names the header.
std::string header_syntax_error(const std::string& raw_head);

/// The method of a well-formed request line (`method SP target SP HTTP/1.x`, the method a
/// token) that httplib does not route (anything but GET, HEAD, POST, PUT, DELETE, OPTIONS,
/// PATCH: it answers those 400 like garbage), else "": RFC 9110 15.6.2 has a server answer
/// a method it does not support 501, so a client can tell "not here" from "broken".
std::string unimplemented_method(const std::string& raw_head);

/// The request being handled on the calling thread: valid inside httplib's handlers, error
/// handler and logger (they run on the connection's thread); nullptr elsewhere.
RequestReading* current_request();

/// Ends the connection of the request handled on this thread once its response is written.
void close_connection_after_response();

/// The header lines of a raw header section (the request line and the ending blank line
/// not included), each without its line ending.
std::vector<std::string> raw_header_lines(const std::string& raw_head);

/// The values of the header lines named `name` (case-insensitive) in a raw header section,
/// empty values included (httplib drops those), leading and trailing blanks removed.
std::vector<std::string> raw_header_values(const std::string& raw_head, const std::string& name);

class ConnectionStream;  // http_connection.cpp

class HttpServer : public httplib::Server {
 public:
  /// The body of an error the connection loop writes itself, outside httplib (a request
  /// line that did not arrive within the read timeout: 408); the server gives it the OpenAI
  /// shape and counts it. Without one, such a connection is closed without an answer.
  using OwnErrorBody = std::function<std::string(int status, const std::string& message)>;
  void set_own_error_body(OwnErrorBody body) { own_error_body_ = std::move(body); }
  /// After bind_to_port: the listen backlog becomes SOMAXCONN. httplib 0.11 listens with a
  /// backlog of 5, so a burst of connects past it had SYNs dropped and retried 1 s later.
  void widen_listen_backlog();
  /// At most `n` connections served at once, each on its thread (serve/connection_pool.hpp:
  /// one more ends the connection that has waited longest on its client, or is answered 503
  /// when all `n` are answering requests). Before listening.
  void set_max_connections(std::size_t n);

 private:
  void refuse_connection(socket_t sock) const;
  bool process_and_close_socket(socket_t sock) override;
  bool wait_for_request(ConnectionStream& strm) const;
  OwnErrorBody own_error_body_;
  std::size_t max_connections_ = 0;
};

}  // namespace llmport::serve
