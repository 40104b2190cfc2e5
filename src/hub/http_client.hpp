#pragma once
// A minimal libcurl client for the hub protocol: HEAD without following redirects (the
// hub's metadata lives on the 302 itself), and a streaming GET into a file descriptor
// with an optional Range start. Transport failures throw NetworkError.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "llmport/error.hpp"

namespace llmport::hub {

/// Could not talk to the server at all (DNS, refused, timeout, reset). Exit 2.
class NetworkError : public UsageError {
 public:
  NetworkError(const std::string& what, bool partial) : UsageError(what), partial_transfer(partial) {}
  bool partial_transfer;  ///< the connection broke mid-body (worth resuming)
};

struct HttpRequest {
  std::string url;
  std::optional<std::string> bearer;  ///< Authorization: Bearer <token>
  long connect_timeout_s = 10;
  long total_timeout_s = 0;           ///< 0: none (downloads use the stall timeout instead)
  long stall_timeout_s = 10;          ///< abort when below 1 byte/s for this long
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  ///< lower-case names, last response only
  std::string body;                            ///< error bodies only (first 4 KiB)
  std::string header(const std::string& lower_name) const;
};

/// HEAD url, redirects not followed. Throws NetworkError on transport failure.
HttpResponse http_head(const HttpRequest& req);

/// What a GET into a file did.
struct GetResult {
  HttpResponse response;
  uint64_t written = 0;      ///< body bytes appended at `offset` (after a 200 to a Range
                             ///< request the file is truncated and this counts from 0)
  bool restarted = false;    ///< server ignored Range (200): the file now starts at 0
  int write_errno = 0;       ///< errno of a failed write (ENOSPC: disk full), else 0
};

/// GET url (following redirects) appending the body of a 200/206 to fd, asking for
/// `Range: bytes=offset-` when offset > 0. on_progress(total bytes in file) is called
/// as data arrives. Error statuses (>= 400) return with the body in response.body.
/// Throws NetworkError on transport failure (partial_transfer when the body broke off);
/// a write failure returns with write_errno set.
GetResult http_get_to_fd(const HttpRequest& req, int fd, uint64_t offset,
                         const std::function<void(uint64_t)>& on_progress);

/// Same scheme://host:port? (auth is only sent back to the hub's own origin).
bool same_origin(const std::string& a, const std::string& b);

/// Percent-encodes one URL path segment ('/' encoded too).
std::string url_escape(const std::string& s);

}  // namespace llmport::hub
