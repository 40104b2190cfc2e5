// A deploy ended by a signal leaves a line in progress.md (src/deploy/interrupt_note.cpp),
// and still dies of that signal.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deploy/interrupt_note.hpp"
#include "support/test_support.hpp"

namespace llmport::deploy {
namespace {

// In a child: an InterruptNote on `file`, phase 4 set, then `sig` raised. The child's status.
int interrupted_child(const std::filesystem::path& file, int sig) {
  const pid_t pid = fork();
  if (pid == 0) {
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
