#include "deploy/interrupt_note.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "deploy/util.hpp"
#include "llmport/error.hpp"

namespace llmport::deploy {
namespace {
// The handler may use nothing but these (prepared outside it) and async-signal-safe calls.
int g_fd = -1;
char g_line[3][512];  // one prepared line per signal: SIGINT, SIGTERM, SIGHUP
std::size_t g_len[3] = {0, 0, 0};
constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
constexpr const char* kNames[3] = {"SIGINT (Ctrl-C)", "SIGTERM", "SIGHUP"};
struct sigaction g_old[3];

void on_signal(int sig) {
  for (int i = 0; i < 3; ++i)
    if (kSignals[i] == sig && g_fd >= 0 && g_len[i] > 2) {
      [[maybe_unused]] ssize_t n = ::write(g_fd, g_line[i], g_len[i]);
      // And on the terminal, whose last line is the interrupted phase's unfinished one;
      // the progress log's "- " list marker left off. A stderr whose reader died with the
      // same Ctrl-C (2>&1 | tee) must not turn this death into SIGPIPE's.
      ::signal(SIGPIPE, SIG_IGN);
      n = ::write(STDERR_FILENO, "\n", 1);
      n = ::write(STDERR_FILENO, g_line[i] + 2, g_len[i] - 2);
    }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
}  // namespace

InterruptNote::InterruptNote(const std::filesystem::path& progress) {
  if (progress.has_parent_path()) std::filesystem::create_directories(progress.parent_path());
  g_fd = ::open(progress.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (g_fd < 0) throw UsageError(progress.string() + ": cannot open for appending: " + std::strerror(errno));
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &g_old[i]);
}

InterruptNote::~InterruptNote() {
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_old[i], nullptr);
  ::close(g_fd);
  g_fd = -1;
}

void InterruptNote::set_phase(int phase, const std::string& name) {
  for (int i = 0; i < 3; ++i) {
    const std::string line = "- " + now_iso() + " interrupted by " + kNames[i] + " during phase " +
                             std::to_string(phase) + " (" + name + "); resume with --resume\n";
    const std::size_t n = std::min<std::size_t>(line.size(), 400);
    g_len[i] = 0;  // a signal between these lines writes nothing rather than half a line
    std::memcpy(g_line[i], line.data(), n);
    g_len[i] = n;
  }
}

}  // namespace llmport::deploy
