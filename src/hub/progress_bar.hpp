#pragma once
// A one-line download progress bar on stderr (bytes, percent, rate), drawn only when
// stderr is a terminal; elsewhere (logs, tests, pipes) it prints nothing.
#include <chrono>
#include <cstdint>
#include <string>

namespace llmport::hub {

class ProgressBar {
 public:
  /// total: expected file size in bytes; start: bytes already present (resume).
  ProgressBar(std::string label, uint64_t total, uint64_t start, bool enabled);
  ~ProgressBar();
  /// done: bytes present so far; redrawn at most 10 times a second.
  void update(uint64_t done);
  /// Draws the final state and ends the line.
  void finish();

  /// True when stderr is a terminal.
  static bool stderr_is_tty();

 private:
  void draw(uint64_t done);
  std::string label_;
  uint64_t total_, start_;
  bool enabled_;
  bool drawn_ = false;
  uint64_t last_done_ = 0;
  std::chrono::steady_clock::time_point t0_, last_draw_;
};

/// "1.2 MB", "340 kB", "12 B" (decimal units, as huggingface_hub's tqdm bars).
std::string human_bytes(double bytes);

}  // namespace llmport::hub
