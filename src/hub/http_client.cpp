#include "hub/http_client.hpp"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <memory>
#include <mutex>

namespace llmport::hub {

namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlPtr = std::unique_ptr<CURL, CurlDeleter>;
using SlistPtr = std::unique_ptr<curl_slist, SlistDeleter>;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    headers->clear();  // a new response (after a redirect): keep only the last one's headers
  } else if (auto colon = line.find(':'); colon != std::string::npos) {
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    (*headers)[lower(line.substr(0, colon))] = value;
  }
  return size * n;
}

CurlPtr make_handle(const HttpRequest& req, std::map<std::string, std::string>* headers, SlistPtr& slist) {
  global_init();
  CurlPtr c(curl_easy_init());
  if (!c) throw NetworkError("cannot initialise libcurl", false);
  curl_easy_setopt(c.get(), CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c.get(), CURLOPT_USERAGENT, "llmport/" LLMPORT_VERSION " (huggingface_hub protocol)");
  curl_easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT, req.connect_timeout_s);
  if (req.total_timeout_s > 0) curl_easy_setopt(c.get(), CURLOPT_TIMEOUT, req.total_timeout_s);
  curl_easy_setopt(c.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c.get(), CURLOPT_LOW_SPEED_TIME, req.stall_timeout_s);
  curl_easy_setopt(c.get(), CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c.get(), CURLOPT_HEADERDATA, headers);
  // Bodies byte-for-byte as stored (hashes are over the raw file), as huggingface_hub
  // asks with Accept-Encoding: identity.
  curl_slist* l = curl_slist_append(nullptr, "Accept-Encoding: identity");
  if (req.bearer) l = curl_slist_append(l, ("Authorization: Bearer " + *req.bearer).c_str());
  slist.reset(l);
  curl_easy_setopt(c.get(), CURLOPT_HTTPHEADER, l);
  return c;
}

std::string transport_message(CURLcode code, const char* errbuf, const std::string& url) {
  std::string detail = errbuf[0] ? errbuf : curl_easy_strerror(code);
  return detail + " (" + url + ")";
}

bool is_partial(CURLcode code) {
  return code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR || code == CURLE_OPERATION_TIMEDOUT ||
         code == CURLE_GOT_NOTHING || code == CURLE_SEND_ERROR || code == CURLE_HTTP2_STREAM;
}

struct GetContext {
  CURL* curl = nullptr;
  int fd = -1;
  uint64_t offset = 0;
  bool started = false;
  bool to_file = false;
  GetResult* result = nullptr;
  const std::function<void(uint64_t)>* on_progress = nullptr;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* ctx = static_cast<GetContext*>(user);
  size_t len = size * n;
  if (!ctx->started) {
    ctx->started = true;
    long status = 0;
    curl_easy_getinfo(ctx->curl, CURLINFO_RESPONSE_CODE, &status);
    ctx->to_file = status == 200 || status == 206;
    if (status == 200 && ctx->offset > 0) {
      // The server ignored Range: start the file over.
      if (::ftruncate(ctx->fd, 0) != 0 || ::lseek(ctx->fd, 0, SEEK_SET) != 0) {
        ctx->result->write_errno = errno;
        return 0;
      }
      ctx->offset = 0;
      ctx->result->restarted = true;
    }
  }
  if (!ctx->to_file) {
    auto& body = ctx->result->response.body;
    body.append(data, std::min(len, 4096 - std::min<size_t>(body.size(), 4096)));
    return len;
  }
  size_t done = 0;
  while (done < len) {
    ssize_t w = ::write(ctx->fd, data + done, len - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      ctx->result->write_errno = errno;
      return 0;  // aborts the transfer with CURLE_WRITE_ERROR
    }
    done += static_cast<size_t>(w);
  }
  ctx->result->written += len;
  if (*ctx->on_progress) (*ctx->on_progress)(ctx->offset + ctx->result->written);
  return len;
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse http_head(const HttpRequest& req) {
  HttpResponse r;
  SlistPtr slist;
  auto c = make_handle(req, &r.headers, slist);
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c.get(), CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 0L);
  CURLcode code = curl_easy_perform(c.get());
  if (code != CURLE_OK) throw NetworkError(transport_message(code, errbuf, req.url), false);
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

GetResult http_get_to_fd(const HttpRequest& req, int fd, uint64_t offset,
                         const std::function<void(uint64_t)>& on_progress) {
  GetResult result;
  SlistPtr slist;
  auto c = make_handle(req, &result.response.headers, slist);
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c.get(), CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c.get(), CURLOPT_MAXREDIRS, 10L);
  // Never replay the hub token to another host (the CDN the hub redirects to).
  curl_easy_setopt(c.get(), CURLOPT_UNRESTRICTED_AUTH, 0L);
  std::string range = std::to_string(offset) + "-";
  if (offset > 0) curl_easy_setopt(c.get(), CURLOPT_RANGE, range.c_str());
  GetContext ctx;
  ctx.curl = c.get();
  ctx.fd = fd;
  ctx.offset = offset;
  ctx.result = &result;
  ctx.on_progress = &on_progress;
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &ctx);
  CURLcode code = curl_easy_perform(c.get());
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &result.response.status);
  if (code == CURLE_WRITE_ERROR && result.write_errno != 0) return result;
  if (code != CURLE_OK) throw NetworkError(transport_message(code, errbuf, req.url), is_partial(code));
  return result;
}

bool same_origin(const std::string& a, const std::string& b) {
  auto origin = [](const std::string& u) {
    auto scheme = u.find("://");
    if (scheme == std::string::npos) return lower(u);
    auto end = u.find_first_of("/?#", scheme + 3);
    return lower(u.substr(0, end));
  };
  return origin(a) == origin(b);
}

std::string url_escape(const std::string& s) {
  std::string out;
  static const char* hex = "0123456789ABCDEF";
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

}  // namespace llmport::hub
