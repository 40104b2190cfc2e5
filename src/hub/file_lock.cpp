#include "hub/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hub/hf_cache.hpp"
#include "llmport/error.hpp"

namespace llmport::hub {

FileLock::FileLock(const std::filesystem::path& lock_file, const std::function<void()>& on_wait) {
  ensure_dir(lock_file.parent_path());
  fd_ = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw UsageError("cannot open lock file " + lock_file.string() + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  if (errno == EWOULDBLOCK && on_wait) on_wait();
  // The holder's transfer has bounded stall timeouts, so this wait ends.
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      int e = errno;
      ::close(fd_);
      throw UsageError("cannot lock " + lock_file.string() + ": " + std::strerror(e));
    }
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace llmport::hub
