// A deploy ended by a signal leaves a line in progress.md (src/deploy/interrupt_note.cpp),
// and still dies of that signal.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deploy/interrupt_note.hpp"
#include "support/test_support.hpp"

namespace llmport::deploy {
namespace {

// In a child: an InterruptNote on `file`, phase 4 set, then `sig` raised (its stderr into
// `err` where given). The child's status.
int interrupted_child(const std::filesystem::path& file, int sig, const std::filesystem::path& err = {}) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!err.empty()) {
      const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, STDERR_FILENO);
    }
    InterruptNote note(file);
    note.set_phase(4, "Prefill optimization");
    ::raise(sig);
    _exit(0);  // not reached: the signal ends the child
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(InterruptNote, ASignalAppendsWhereTheDeployStoppedAndStillEndsTheProcess) {
  test::TempDir t;
  const auto file = t.path() / "progress.md";
  test::write_file(file, "- earlier line\n");
  const int status = interrupted_child(file, SIGINT);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  const std::string text = test::read_file(file);
  EXPECT_EQ(text.rfind("- earlier line\n- ", 0), 0u) << text;
  EXPECT_NE(text.find(" interrupted by SIGINT (Ctrl-C) during phase 4 (Prefill optimization); resume with --resume\n"),
            std::string::npos)
      << text;
  const int term = interrupted_child(file, SIGTERM);
  EXPECT_TRUE(WIFSIGNALED(term) && WTERMSIG(term) == SIGTERM);
  EXPECT_NE(test::read_file(file).find(" interrupted by SIGTERM during phase 4"), std::string::npos);
}

// The terminal hears it too, on a line of its own (its last line was the phase's, unended).
TEST(InterruptNote, TheTerminalIsToldWhereTheDeployStopped) {
  test::TempDir t;
  const auto err = t.path() / "stderr.txt";
  const int status = interrupted_child(t.path() / "progress.md", SIGINT, err);
  ASSERT_TRUE(WIFSIGNALED(status));
  const std::string text = test::read_file(err);
  EXPECT_EQ(text.rfind("\n20", 0), 0u) << text;  // "\n<ISO time> interrupted by ..."
  EXPECT_NE(text.find(" interrupted by SIGINT (Ctrl-C) during phase 4 (Prefill optimization); resume with --resume\n"),
            std::string::npos)
      << text;
}

TEST(InterruptNote, HandlersAreRestoredAfterTheDeploy) {
  test::TempDir t;
  struct sigaction before {}, after {};
  sigaction(SIGINT, nullptr, &before);
  { InterruptNote note(t.path() / "progress.md"); }
  sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(before.sa_handler, after.sa_handler);
}

}  // namespace
}  // namespace llmport::deploy
