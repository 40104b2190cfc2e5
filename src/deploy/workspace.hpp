#pragma once
// The deployment workspace `<workspace>/<name>/` and its file layout.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace llmport::deploy {

/// Paths inside one deployment directory. Creating it never touches existing files.
class Workspace {
 public:
  explicit Workspace(std::filesystem::path dir) : dir_(std::move(dir)) {}
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path manifest() const { return dir_ / "deployment.json"; }
  std::filesystem::path readme() const { return dir_ / "README.md"; }
  std::filesystem::path architecture() const { return dir_ / "ARCHITECTURE.md"; }
  std::filesystem::path todo() const { return dir_ / "TODO.md"; }
  std::filesystem::path makefile() const { return dir_ / "Makefile"; }
  std::filesystem::path docs() const { return dir_ / "docs"; }
  std::filesystem::path progress_dir() const { return dir_ / "docs" / "development_progress"; }
  std::filesystem::path progress() const { return progress_dir() / "progress.md"; }
  std::filesystem::path lessons() const { return progress_dir() / "LESSONS.md"; }
  std::filesystem::path debug_log() const { return progress_dir() / "debug_log.md"; }
  std::filesystem::path phase_timing() const { return progress_dir() / "phase_timing.md"; }
  std::filesystem::path evaluation_report() const { return docs() / "evaluation_report.md"; }
  /// The deployment's writable kernel registry (looked up before the shipped one).
  std::filesystem::path registry() const { return dir_ / "registry"; }
  /// Packed-weight kernel cache (content-hashed entries; safe to delete).
  std::filesystem::path kernel_cache() const { return dir_ / "kernel_cache"; }
  /// Per-phase artifacts (diagnosis, verify reports, timings).
  std::filesystem::path phase_dir(int phase) const;
  std::filesystem::path verify_reports() const { return dir_ / "verify" / "reports"; }
  /// True when a deployment.json exists.
  bool is_deployment() const;
  /// Creates the directory tree (no files).
  void create_dirs() const;

 private:
  std::filesystem::path dir_;
};

/// Throws UsageError unless `workspace` is a directory: "workspace W does not exist" or
/// "workspace W is not a directory" (a file stands there).
void require_workspace_dir(const std::filesystem::path& workspace);

/// Deployment directories (holding deployment.json) directly under `workspace`, sorted.
std::vector<std::filesystem::path> list_deployments(const std::filesystem::path& workspace);

/// An exclusive advisory lock (flock) on a file, held for the object's lifetime.
/// Blocks until acquired. Used by `regress` so one deployment per device runs at a time.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& file);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  /// Non-blocking attempt; false when another process holds it.
  static bool try_probe(const std::filesystem::path& file);
  /// Takes the lock without waiting: null when another process holds it. Throws
  /// UsageError when the lock file cannot be created.
  static std::unique_ptr<FileLock> try_lock(const std::filesystem::path& file);

 private:
  FileLock() = default;
  int fd_ = -1;
};

/// The lock file `deploy` holds for the deployment `name` while it runs, beside the
/// deployment directory (so a new deployment's directory is not created early).
std::filesystem::path deployment_lock_file(const std::filesystem::path& workspace,
                                           const std::string& name);

}  // namespace llmport::deploy
