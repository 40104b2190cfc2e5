#pragma once
// An exclusive advisory lock on a lock file (flock), held for the object's lifetime, so two
// llmport processes (or threads) never write the same blob; the huggingface_hub
// equivalent is filelock on .locks/<repo>/<etag>.lock.
#include <filesystem>
#include <functional>

namespace llmport::hub {

class FileLock {
 public:
  /// Blocks until the lock is held; `on_wait` is called once if another holder is seen.
  explicit FileLock(const std::filesystem::path& lock_file, const std::function<void()>& on_wait = {});
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace llmport::hub
