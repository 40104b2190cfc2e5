#pragma once
// A fake Hugging Face hub on 127.0.0.1 (ephemeral port) speaking the protocol
// huggingface_hub expects: GET/HEAD /{org}/{name}/resolve/{revision}/{file} with
// X-Repo-Commit; LFS files (*.safetensors) answer 302 to /lfs/<sha256> with X-Linked-Etag
// and X-Linked-Size; other files answer 200 with ETag = git blob sha1; Range -> 206;
// 401 for a gated repo without the right token; 404 for unknown repos, revisions, files.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}

namespace llmport::test {

std::string sha256_hex(const std::string& bytes);
/// git's blob id: sha1("blob <len>\0" + bytes).
std::string git_blob_sha1_hex(const std::string& bytes);

struct FakeRepo {
  std::string commit;                         ///< 40 hex digits
  std::map<std::string, std::string> files;   ///< name -> content
  bool gated = false;                         ///< needs "Authorization: Bearer <token>"
};

/// One request the server saw.
struct Hit {
  std::string method, path, range;
  bool authorized = false;  ///< carried an Authorization header
};

class FakeHub {
 public:
  FakeHub();
  ~FakeHub();
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  void add_repo(const std::string& repo_id, FakeRepo repo);
  /// A renamed repo: the hub answers the old id with a 307 to a relative URL of the new one.
  void add_rename(const std::string& old_id, const std::string& new_id);
  std::string endpoint() const;  ///< http://127.0.0.1:<port>
  void stop();

  /// Serve LFS blobs from another FakeHub (a "CDN" on another origin).
  void set_lfs_origin(FakeHub* cdn) { lfs_origin_ = cdn; }

  std::string token = "hf_test_token";     ///< accepted for gated repos
  std::atomic<int64_t> cut_next_lfs_at{-1};  ///< next LFS body drops the connection after this byte (once)
  std::atomic<bool> corrupt_lfs{false};      ///< LFS bodies have one byte flipped
  std::atomic<int> lfs_chunk_delay_ms{0};    ///< pause per 64 KiB LFS chunk
  std::atomic<bool> send_error_codes{true};  ///< X-Error-Code headers on errors
  std::atomic<uint64_t> lfs_bytes_sent{0};

  std::vector<Hit> hits() const;
  /// Number of requests with this method whose path starts with prefix.
  int count(const std::string& method, const std::string& prefix) const;

 private:
  struct Blob;
  void setup_routes();
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  FakeHub* lfs_origin_ = nullptr;
  mutable std::mutex mu_;
  std::map<std::string, FakeRepo> repos_;
  std::map<std::string, std::string> renames_;    // old id -> new id
  std::map<std::string, std::string> lfs_blobs_;  // sha256 -> content
  std::vector<Hit> hits_;
};

}  // namespace llmport::test
