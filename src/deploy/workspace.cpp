#include "deploy/workspace.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "llmport/error.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

fs::path Workspace::phase_dir(int phase) const {
  return dir_ / "phases" / fmt::format("phase{}", phase);
}

bool Workspace::is_deployment() const { return fs::is_regular_file(manifest()); }

void Workspace::create_dirs() const {
  for (const auto& d : {dir_, progress_dir(), registry(), verify_reports(), dir_ / "phases"})
    fs::create_directories(d);
}

namespace {
// flock needs an open descriptor, not write access: a lock file another user created (the
// per-device lock in /tmp, mode 0644) is opened read-only rather than refused.
int open_lock_file(const fs::path& file) {
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  const int create_errno = errno;
  if (fd < 0 && (create_errno == EACCES || create_errno == EROFS)) {
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    // No lock file to share (a read-only workspace where none was made yet): the reason is
    // the create's ("Permission denied"), not the fallback's "No such file or directory".
    if (fd < 0 && errno == ENOENT) errno = create_errno;
  }
  if (fd < 0) throw UsageError(file.string() + ": cannot open lock file: " + std::strerror(errno));
  return fd;
}
}  // namespace

FileLock::FileLock(const fs::path& file) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  fd_ = open_lock_file(file);
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      ::close(fd_);
      throw UsageError(file.string() + ": cannot lock: " + std::strerror(errno));
    }
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

std::unique_ptr<FileLock> FileLock::try_lock(const fs::path& file) {
  std::unique_ptr<FileLock> lock(new FileLock());
  lock->fd_ = open_lock_file(file);
  while (::flock(lock->fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return nullptr;  // the destructor closes fd_
    if (errno != EINTR) throw UsageError(file.string() + ": cannot lock: " + std::strerror(errno));
  }
  return lock;
}

fs::path deployment_lock_file(const fs::path& workspace, const std::string& name) {
  return workspace / ("." + name + ".deploy.lock");
}

bool FileLock::try_probe(const fs::path& file) {
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  if (ok) ::flock(fd, LOCK_UN);
  ::close(fd);
  return ok;
}

}  // namespace llmport::deploy
