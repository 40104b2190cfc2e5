#pragma once
// One model repository inside the Hugging Face cache, laid out exactly as huggingface_hub
// lays it out (file_download.py, docs "Understand caching"):
//   <cache_root>/models--<org>--<name>/
//     refs/<revision>                 commit hash the revision pointed to
//     blobs/<etag>                    file contents; etag = sha256 (LFS) or git blob sha1
//     blobs/<etag>.incomplete         a download in progress (resumable)
//     snapshots/<commit>/<file>       relative symlink -> ../../blobs/<etag>
//     .no_exist/<commit>/<file>       empty marker: the file does not exist at that commit
//   <cache_root>/.locks/models--<org>--<name>/<etag>.lock
#include <filesystem>
#include <optional>
#include <string>

namespace llmport::hub {

class RepoCache {
 public:
  RepoCache(std::filesystem::path cache_root, const std::string& repo_id);

  const std::filesystem::path& root() const { return root_; }
  const std::filesystem::path& repo_dir() const { return repo_dir_; }

  /// Commit the revision names: the revision itself when it is a commit hash with a
  /// snapshot folder, else the content of refs/<revision>; nullopt when not cached.
  std::optional<std::string> commit_for(const std::string& revision) const;
  /// Writes refs/<revision> = commit atomically (not for commit-hash revisions).
  void write_ref(const std::string& revision, const std::string& commit) const;

  std::filesystem::path snapshot_dir(const std::string& commit) const;
  std::filesystem::path blob_path(const std::string& etag) const;
  std::filesystem::path incomplete_path(const std::string& etag) const;
  std::filesystem::path lock_path(const std::string& etag) const;

  /// The snapshot entry exists and resolves to a regular file.
  bool has_file(const std::string& commit, const std::string& file) const;
  /// A .no_exist marker says the file is absent at this commit.
  bool marked_missing(const std::string& commit, const std::string& file) const;
  void mark_missing(const std::string& commit, const std::string& file) const;
  /// snapshots/<commit>/<file> -> relative link to blobs/<etag>, replaced atomically.
  void link_snapshot(const std::string& commit, const std::string& file, const std::string& etag) const;

 private:
  std::filesystem::path root_;
  std::filesystem::path repo_dir_;
  std::filesystem::path lock_dir_;
};

/// Creates the directory (and parents); a concurrent creator is not an error.
void ensure_dir(const std::filesystem::path& dir);

/// A name unique to this process and thread, for temp files renamed into place.
std::string unique_suffix();

}  // namespace llmport::hub
