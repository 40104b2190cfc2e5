#pragma once
// A deploy stopped by Ctrl-C (SIGINT), SIGTERM or SIGHUP leaves a line in progress.md saying
// where it stopped and how to go on, instead of a log that ends at "phase N started".
#include <filesystem>
#include <string>

namespace llmport::deploy {

/// While alive, SIGINT, SIGTERM and SIGHUP append the prepared line to `progress` (one
/// write(2), async-signal-safe) and then end the process as the signal would have (default
/// action, re-raised: the exit status stays "killed by SIGINT"). One per process; the
/// previous handlers come back at destruction. Throws UsageError when `progress` cannot be
/// opened for appending.
class InterruptNote {
 public:
  explicit InterruptNote(const std::filesystem::path& progress);
  ~InterruptNote();
  InterruptNote(const InterruptNote&) = delete;
  InterruptNote& operator=(const InterruptNote&) = delete;
  /// The line a signal writes from now on: "- <now> interrupted by <signal> during phase
  /// <phase> (<name>); resume with --resume". Truncated to 400 bytes.
  void set_phase(int phase, const std::string& name);
};

}  // namespace llmport::deploy
