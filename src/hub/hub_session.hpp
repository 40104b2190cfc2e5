#pragma once
// Talking to one model repository on the hub: file metadata from
// HEAD {endpoint}/{repo}/resolve/{revision}/{file} (X-Repo-Commit, ETag / X-Linked-Etag,
// Content-Length / X-Linked-Size, Location of the LFS blob), and blob downloads into the
// cache: under a file lock, into blobs/<etag>.incomplete, resumed with Range, verified
// (size; sha256 or git blob sha1 per the ETag) and only then renamed to blobs/<etag>.
#include <cstdint>
#include <optional>
#include <string>

#include "hub/hf_cache.hpp"
#include "hub/http_client.hpp"
#include "hub/hub_env.hpp"

namespace llmport::hub {

/// What the hub says about one file at one revision.
struct FileMeta {
  std::string commit;        ///< X-Repo-Commit
  std::string etag;          ///< normalized: sha256 for LFS files, git blob sha1 otherwise
  uint64_t size = 0;         ///< bytes
  std::string download_url;  ///< the 302 Location for LFS files, else the resolve URL
};

class HubSession {
 public:
  HubSession(HubEnv env, std::string repo_id, bool quiet);

  /// HEAD of the file. Returns nullopt when the file does not exist at the revision
  /// and `required` is false; throws UsageError with an actionable line for 401/403
  /// (gated), 404 (unknown id, revision or required file), other statuses, and
  /// NetworkError when the hub cannot be reached.
  std::optional<FileMeta> file_meta(const std::string& revision, const std::string& file, bool required);

  /// Makes sure blobs/<etag> holds the verified file; returns bytes transferred.
  uint64_t fetch_blob(const RepoCache& cache, const FileMeta& meta, const std::string& file);

  const HubEnv& env() const { return env_; }
  std::string model_page() const { return env_.endpoint + "/" + repo_id_; }

 private:
  [[noreturn]] void throw_status(const HttpResponse& r, const std::string& revision, const std::string& file,
                                 const std::string& url) const;
  HttpRequest request(const std::string& url) const;

  HubEnv env_;
  std::string repo_id_;
  bool quiet_;
};

}  // namespace llmport::hub
