#include "hub/progress_bar.hpp"

#include <unistd.h>

#include <cstdio>

namespace llmport::hub {

std::string human_bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000.0 && u < 4) {
    b /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

bool ProgressBar::stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(std::string label, uint64_t total, uint64_t start, bool enabled)
    : label_(std::move(label)), total_(total), start_(start), enabled_(enabled && stderr_is_tty()),
      last_done_(start), t0_(std::chrono::steady_clock::now()), last_draw_() {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputc('\n', stderr);
}

void ProgressBar::update(uint64_t done) {
  last_done_ = done;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(done);
}

void ProgressBar::finish() {
  if (!enabled_) return;
  draw(last_done_);
  std::fputc('\n', stderr);
  drawn_ = false;
}

void ProgressBar::draw(uint64_t done) {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  double rate = secs > 0 ? static_cast<double>(done - std::min(done, start_)) / secs : 0.0;
  int pct = total_ ? static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total_)) : 100;
  const int width = 24;
  int fill = total_ ? static_cast<int>(width * static_cast<double>(done) / static_cast<double>(total_)) : width;
  std::string bar(static_cast<size_t>(std::min(fill, width)), '#');
  bar.resize(width, ' ');
  std::fprintf(stderr, "\r%s [%s] %3d%% %s/%s %s/s\033[K", label_.c_str(), bar.c_str(), pct,
               human_bytes(static_cast<double>(done)).c_str(), human_bytes(static_cast<double>(total_)).c_str(),
               human_bytes(rate).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace llmport::hub
