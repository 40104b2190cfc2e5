#include "deploy/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "llmport/deploy.hpp"
#include "llmport/error.hpp"

extern char** environ;

namespace llmport::deploy {
namespace fs = std::filesystem;

fs::path self_executable() {
  // Tests and wrappers point at the llmport binary explicitly (a test executable calling
  // the library must not spawn itself).
  if (const char* e = std::getenv("LLMPORT_EXE"); e && *e) return fs::path(e);
  std::error_code ec;
  std::string p = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw UsageError("cannot locate the llmport executable (/proc/self/exe); set LLMPORT_EXE");
  // A binary replaced while it runs (a rebuild during a deploy) reads "PATH (deleted)": the
  // file now at PATH is the one a later `make run` should call.
  constexpr std::string_view kDeleted = " (deleted)";
  if (p.size() > kDeleted.size() && p.ends_with(kDeleted)) p.resize(p.size() - kDeleted.size());
  return p;
}

int run_process(const std::vector<std::string>& argv, const fs::path& log_file, const fs::path& cwd) {
  if (argv.empty()) throw UsageError("run_process: empty command");
  if (log_file.has_parent_path()) fs::create_directories(log_file.parent_path());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  std::vector<std::string> copy = argv;
  std::vector<char*> av;
  for (auto& a : copy) av.push_back(a.data());
  av.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw UsageError("cannot start " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw UsageError("waitpid failed for " + argv[0]);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace llmport::deploy
