#include "hub/fake_hub.hpp"

#include <httplib.h>
#include <openssl/evp.h>

#include <chrono>
#include <stdexcept>

namespace llmport::test {

namespace {

std::string digest_hex(const std::string& bytes, const EVP_MD* md) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), out, &n, md, nullptr);
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) {
    s += hex[out[i] >> 4];
    s += hex[out[i] & 15];
  }
  return s;
}

bool is_lfs(const std::string& file) {
  const std::string ext = ".safetensors";
  return file.size() >= ext.size() && file.compare(file.size() - ext.size(), ext.size(), ext) == 0;
}

void error(httplib::Response& res, int status, const std::string& code, const std::string& msg, bool codes) {
  res.status = status;
  if (codes) {
    res.set_header("X-Error-Code", code);
    res.set_header("X-Error-Message", msg);
  }
  res.set_content(msg, "text/plain");
}

// "\"" + s + "\"" written out: GCC 12 flags the operator+ form with a false -Wrestrict.
std::string quoted(const std::string& s) {
  std::string q;
  q.reserve(s.size() + 2);
  q += '"';
  q += s;
  q += '"';
  return q;
}

}  // namespace

std::string sha256_hex(const std::string& bytes) { return digest_hex(bytes, EVP_sha256()); }

std::string git_blob_sha1_hex(const std::string& bytes) {
  std::string obj = "blob " + std::to_string(bytes.size());
  obj.push_back('\0');
  obj += bytes;
  return digest_hex(obj, EVP_sha1());
}

FakeHub::FakeHub() : server_(std::make_unique<httplib::Server>()) {
  server_->set_read_timeout(5, 0);
  server_->set_write_timeout(5, 0);
  setup_routes();
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("fake hub: cannot bind 127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  for (int i = 0; i < 500 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

FakeHub::~FakeHub() { stop(); }

void FakeHub::stop() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

std::string FakeHub::endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

void FakeHub::add_repo(const std::string& repo_id, FakeRepo repo) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, content] : repo.files)
    if (is_lfs(name)) lfs_blobs_[sha256_hex(content)] = content;
  repos_[repo_id] = std::move(repo);
}

void FakeHub::add_rename(const std::string& old_id, const std::string& new_id) {
  std::lock_guard<std::mutex> lock(mu_);
  renames_[old_id] = new_id;
}

std::vector<Hit> FakeHub::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

int FakeHub::count(const std::string& method, const std::string& prefix) const {
  int n = 0;
  for (const auto& h : hits())
    if (h.method == method && h.path.rfind(prefix, 0) == 0) ++n;
  return n;
}

void FakeHub::setup_routes() {
  // Logged before routing: a handler that drops the connection is still recorded.
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
    std::lock_guard<std::mutex> lock(mu_);
    hits_.push_back(Hit{req.method, req.path, req.get_header_value("Range"), req.has_header("Authorization")});
    return httplib::Server::HandlerResponse::Unhandled;
  });

  server_->Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))", [this](const httplib::Request& req,
                                                                  httplib::Response& res) {
    const std::string repo_id = req.matches[1].str() + "/" + req.matches[2].str();
    const std::string revision = req.matches[3], file = req.matches[4];
    const bool codes = send_error_codes;
    std::lock_guard<std::mutex> lock(mu_);
    if (auto rn = renames_.find(repo_id); rn != renames_.end()) {
      res.status = 307;
      res.set_header("Location", "/" + rn->second + "/resolve/" + revision + "/" + file);
      return;
    }
    auto it = repos_.find(repo_id);
    if (it == repos_.end()) return error(res, 404, "RepoNotFound", "Repository not found", codes);
    const FakeRepo& repo = it->second;
    if (repo.gated && req.get_header_value("Authorization") != "Bearer " + token)
      return error(res, 401, "GatedRepo",
                   "Access to model " + repo_id + " is restricted. You must be authenticated to access it.", codes);
    if (revision != "main" && revision != repo.commit)
      return error(res, 404, "RevisionNotFound", "Invalid rev id: " + revision, codes);
    auto f = repo.files.find(file);
    if (f == repo.files.end()) return error(res, 404, "EntryNotFound", "Entry not found", codes);
    const std::string& content = f->second;
    res.set_header("X-Repo-Commit", repo.commit);
    if (is_lfs(file)) {
      // The hub answers LFS files with a redirect to the blob store; the metadata
      // huggingface_hub needs is on the 302 itself. ETag is the pointer file's id.
      const std::string sha = sha256_hex(content);
      const std::string origin = lfs_origin_ ? lfs_origin_->endpoint() : endpoint();
      res.status = 302;
      res.set_header("Location", origin + "/lfs/" + sha);
      res.set_header("X-Linked-Etag", quoted(sha));
      res.set_header("X-Linked-Size", std::to_string(content.size()));
      res.set_header("ETag", quoted(git_blob_sha1_hex("version https://git-lfs.github.com/spec/v1\noid sha256:" + sha +
                                                      "\nsize " + std::to_string(content.size()) + "\n")));
      return;
    }
    res.set_header("ETag", quoted(git_blob_sha1_hex(content)));
    res.set_content(content, "application/octet-stream");
  });

  server_->Get(R"(/lfs/([0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
    std::string content;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = lfs_blobs_.find(req.matches[1]);
      if (it == lfs_blobs_.end()) {
        res.status = 404;
        return;
      }
      content = it->second;
    }
    if (corrupt_lfs && !content.empty()) content[content.size() / 2] ^= 0x5a;
    res.set_header("ETag", quoted(req.matches[1].str()));
    res.set_header("Accept-Ranges", "bytes");
    const int64_t cut = cut_next_lfs_at.exchange(-1);
    auto body = std::make_shared<std::string>(std::move(content));
    res.set_content_provider(body->size(), "application/octet-stream",
                             [this, body, cut](size_t offset, size_t length, httplib::DataSink& sink) {
                               size_t n = std::min<size_t>(length, 64 * 1024);
                               if (cut >= 0 && offset + n > static_cast<size_t>(cut)) {
                                 size_t keep = static_cast<size_t>(cut) > offset ? static_cast<size_t>(cut) - offset : 0;
                                 if (keep) sink.write(body->data() + offset, keep);
                                 lfs_bytes_sent += keep;
                                 return false;  // drop the connection mid-body
                               }
                               if (int d = lfs_chunk_delay_ms.load())
                                 std::this_thread::sleep_for(std::chrono::milliseconds(d));
                               lfs_bytes_sent += n;
                               return sink.write(body->data() + offset, n);
                             });
  });
}

}  // namespace llmport::test
