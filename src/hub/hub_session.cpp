#include "hub/hub_session.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "hub/file_hash.hpp"
#include "hub/file_lock.hpp"
#include "hub/model_id.hpp"
#include "hub/progress_bar.hpp"
#include "llmport/error.hpp"

namespace llmport::hub {
namespace fs = std::filesystem;

namespace {

constexpr int kMaxAttempts = 5;  // resumed GETs per file after a broken connection

// huggingface_hub _normalize_etag: drop a weak "W/" prefix and the quotes.
std::string normalize_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

std::optional<uint64_t> parse_size(const std::string& s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::string origin_of(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  return url.substr(0, url.find('/', scheme + 3));
}

// An etag used as a file name must not escape blobs/.
bool safe_etag(const std::string& e) {
  if (e.empty() || e.size() > 200) return false;
  for (char c : e)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return e.find("..") == std::string::npos;
}

uint64_t fd_size(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

[[noreturn]] void throw_write_error(int err, const fs::path& file, const fs::path& cache_root) {
  if (err == ENOSPC || err == EDQUOT)
    throw UsageError("disk full while writing " + file.string() + ": free space under " + cache_root.string() +
                     " (or point HF_HUB_CACHE elsewhere) and run again; the download resumes from the " +
                     "partial file");
  throw UsageError("cannot write " + file.string() + ": " + std::strerror(err));
}

}  // namespace

HubSession::HubSession(HubEnv env, std::string repo_id, bool quiet)
    : env_(std::move(env)), repo_id_(std::move(repo_id)), quiet_(quiet) {}

HttpRequest HubSession::request(const std::string& url) const {
  HttpRequest r;
  r.url = url;
  // The token only ever goes to the hub's own origin, never to the CDN it redirects to.
  if (same_origin(url, env_.endpoint)) r.bearer = env_.token;
  r.connect_timeout_s = env_.download_timeout_s;
  r.stall_timeout_s = env_.download_timeout_s;
  return r;
}

void HubSession::throw_status(const HttpResponse& r, const std::string& revision, const std::string& file,
                              const std::string& url) const {
  const std::string code = r.header("x-error-code");
  const std::string status = "HTTP " + std::to_string(r.status);
  const std::string token_hint =
      env_.token ? "the token (HF_TOKEN or " + env_.token_file.string() + ") was sent but has no access"
                 : "no token was sent";
  if (r.status == 401 || r.status == 403) {
    if (code == "RepoNotFound")
      throw UsageError("model '" + repo_id_ + "' not found on " + env_.endpoint + " (" + status +
                       "): check the id; if it is private or gated, accept the license on the model page (" +
                       model_page() + ") and set HF_TOKEN");
    throw UsageError("model '" + repo_id_ + "' is gated or private (" + status + ", " + token_hint +
                     "): accept the license on the model page (" + model_page() +
                     ") and set HF_TOKEN (or run `huggingface-cli login`)");
  }
  if (r.status == 404) {
    if (code == "RevisionNotFound")
      throw UsageError("revision '" + revision + "' not found in model '" + repo_id_ + "' (" + status +
                       "): check the branch, tag or commit after '@'");
    if (code == "EntryNotFound")
      throw UsageError("model '" + repo_id_ + "' at revision '" + revision + "' has no " + file + " (" + status +
                       ")");
    throw UsageError("model '" + repo_id_ + "' not found on " + env_.endpoint + " at revision '" + revision +
                     "' (" + status + " for " + file + "): unknown model id or revision");
  }
  std::string msg = r.header("x-error-message");
  throw UsageError("the hub answered " + status + " for " + url + (msg.empty() ? "" : ": " + msg) +
                   (r.status >= 500 ? "; try again later" : ""));
}

std::optional<FileMeta> HubSession::file_meta(const std::string& revision, const std::string& file,
                                              bool required) {
  std::string path;
  for (std::size_t b = 0; b <= file.size();) {
    auto e = file.find('/', b);
    if (e == std::string::npos) e = file.size();
    if (!path.empty()) path += '/';
    path += url_escape(file.substr(b, e - b));
    b = e + 1;
  }
  std::string url = env_.endpoint + "/" + repo_id_ + "/resolve/" + url_escape(revision) + "/" + path;
  HttpRequest req = request(url);
  req.total_timeout_s = env_.etag_timeout_s;
  HttpResponse r = http_head(req);
  // Relative redirects (a renamed repo) are followed for metadata, as huggingface_hub does;
  // an absolute one is the LFS blob's location and carries the metadata itself.
  for (int hops = 0; r.status >= 300 && r.status < 400 && r.header("location").rfind("/", 0) == 0; ++hops) {
    if (hops == 5) throw UsageError("too many redirects for " + url);
    url = origin_of(env_.endpoint) + r.header("location");
    req = request(url);
    req.total_timeout_s = env_.etag_timeout_s;
    r = http_head(req);
  }
  if (r.status >= 400) {
    const std::string code = r.header("x-error-code");
    bool entry_missing = r.status == 404 && (code == "EntryNotFound" || code.empty());
    if (!required && entry_missing) return std::nullopt;
    throw_status(r, revision, file, url);
  }
  FileMeta m;
  m.commit = r.header("x-repo-commit");
  std::string linked = r.header("x-linked-etag");
  m.etag = normalize_etag(linked.empty() ? r.header("etag") : linked);
  auto size = parse_size(r.header("x-linked-size").empty() ? r.header("content-length") : r.header("x-linked-size"));
  if (m.commit.empty() || m.etag.empty() || !size)
    throw UsageError("the server at " + env_.endpoint + " did not send X-Repo-Commit, ETag and size for " + url +
                     ": is HF_ENDPOINT a Hugging Face hub?");
  if (!is_commit_hash(m.commit) || !safe_etag(m.etag))
    throw UsageError("the server at " + env_.endpoint + " sent a malformed commit or ETag for " + url);
  m.size = *size;
  m.download_url = (r.status >= 300 && r.status < 400) ? r.header("location") : url;
  if (m.download_url.empty()) throw UsageError("redirect without Location for " + url);
  return m;
}

uint64_t HubSession::fetch_blob(const RepoCache& cache, const FileMeta& meta, const std::string& file) {
  const fs::path blob = cache.blob_path(meta.etag);
  std::error_code ec;
  if (fs::is_regular_file(blob, ec)) return 0;
  ensure_dir(blob.parent_path());
  FileLock lock(cache.lock_path(meta.etag), [&] {
    if (!quiet_) std::fprintf(stderr, "waiting for another download of %s/%s\n", repo_id_.c_str(), file.c_str());
  });
  if (fs::is_regular_file(blob, ec)) return 0;  // the other writer finished it

  const fs::path part = cache.incomplete_path(meta.etag);
  int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw_write_error(errno, part, cache.root());
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};

  if (fd_size(fd) > meta.size && ::ftruncate(fd, 0) != 0) throw_write_error(errno, part, cache.root());
  uint64_t have = fd_size(fd);
  auto space = fs::space(blob.parent_path(), ec);
  if (!ec && space.available < meta.size - have)
    throw UsageError("disk full: " + repo_id_ + "/" + file + " needs " +
                     human_bytes(static_cast<double>(meta.size - have)) + " but only " +
                     human_bytes(static_cast<double>(space.available)) + " are free under " + cache.root().string() +
                     ": free space or point HF_HUB_CACHE elsewhere");

  ProgressBar bar(repo_id_ + "/" + file, meta.size, have, !quiet_ && !env_.progress_disabled);
  uint64_t transferred = 0;
  for (int attempt = 1; have < meta.size; ++attempt) {
    GetResult g;
    try {
      g = http_get_to_fd(request(meta.download_url), fd, have, [&](uint64_t done) { bar.update(done); });
    } catch (const NetworkError& e) {
      uint64_t now = fd_size(fd);
      transferred += now - std::min(now, have);
      if (e.partial_transfer && attempt < kMaxAttempts) {
        // Broken mid-body: resume from what arrived (Range), after a short pause.
        std::this_thread::sleep_for(std::chrono::milliseconds(now > have ? 0 : 200 * attempt));
        have = now;
        continue;
      }
      throw NetworkError("download of " + repo_id_ + "/" + file + " failed: " + e.what() +
                             (now > 0 ? "; run again to resume from " + part.string() : std::string()),
                         e.partial_transfer);
    }
    if (g.write_errno) throw_write_error(g.write_errno, part, cache.root());
    if (g.response.status == 416) {  // nothing left to send: the file is already whole
      have = fd_size(fd);
      break;
    }
    if (g.response.status >= 400) {
      if (!same_origin(meta.download_url, env_.endpoint))  // the CDN's signed link, not the hub
        throw UsageError("the file store answered HTTP " + std::to_string(g.response.status) + " for " + repo_id_ +
                         "/" + file + " (" + meta.download_url + "): run again (its signed links expire)");
      throw_status(g.response, meta.commit, file, meta.download_url);
    }
    transferred += g.written;
    uint64_t now = fd_size(fd);
    if (now > meta.size) break;  // reported below as a size mismatch
    if (now == have && attempt >= kMaxAttempts)
      throw UsageError("download of " + repo_id_ + "/" + file + " made no progress after " +
                       std::to_string(kMaxAttempts) + " attempts (" + meta.download_url + ")");
    have = now;
  }
  bar.finish();
  have = fd_size(fd);

  auto discard = [&](const std::string& why) {
    std::error_code ignore;
    fs::remove(part, ignore);
    throw UsageError("download of " + repo_id_ + "/" + file + " is corrupt: " + why +
                     "; the bad copy was deleted, run again to download it anew");
  };
  if (have != meta.size)
    discard("got " + std::to_string(have) + " bytes, the hub says " + std::to_string(meta.size));
  if (::fsync(fd) != 0) throw_write_error(errno, part, cache.root());
  if (is_sha256_hex(meta.etag)) {
    std::string got = sha256_file(part);
    if (got != meta.etag) discard("sha256 " + got + " != " + meta.etag);
  } else if (is_commit_hash(meta.etag)) {
    std::string got = git_blob_sha1_file(part);
    if (got != meta.etag) discard("git blob sha1 " + got + " != " + meta.etag);
  }
  fs::rename(part, blob, ec);
  if (ec) throw UsageError("cannot move " + part.string() + " to " + blob.string() + ": " + ec.message());
  return transferred;
}

}  // namespace llmport::hub
