#pragma once
// A persistent team for the CPU backend's parallel regions that never waits for a thread
// that did not start. Work is cut into chunks that threads claim with a CAS; the caller
// claims chunks too and returns once every claimed chunk is done. A worker that the OS has
// descheduled (a shared, oversubscribed machine) therefore costs nothing unless it holds a
// chunk, whereas a fork/join region (OpenMP) makes every thread wait for the slowest one at
// each of the ~10 regions per layer of a decode step (measured: 2 threads 4x slower than 1
// on a loaded 2-core machine).
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace llmport::cpu {

class WorkPool {
 public:
  /// `threads` >= 1 including the caller; threads - 1 workers are started once.
  explicit WorkPool(int threads);
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs f(chunk, slot) for chunk in [0, n_chunks) on the caller and the workers; slot
  /// is in [0, threads()) and unique among concurrently running chunks (per-thread
  /// scratch). Returns when all chunks are done. Not reentrant.
  template <class F>
  void run(int n_chunks, F&& f) {
    if (n_chunks <= 0) return;
    if (workers_.empty() || n_chunks == 1) {
      for (int c = 0; c < n_chunks; ++c) f(c, 0);
      return;
    }
    run_erased(n_chunks, [](void* ctx, int c, int slot) { (*static_cast<F*>(ctx))(c, slot); },
               &f);
  }

 private:
  using Fn = void (*)(void*, int, int);
  void run_erased(int n_chunks, Fn fn, void* ctx);
  void worker_loop(int slot);
  // Claims the next chunk of the current generation; -1 when none is left.
  int claim();

  // state_: [generation:16 | n_chunks:24 | next chunk:24]. fn_/ctx_ are written before
  // the release store that starts a generation and stay valid while any chunk of it is
  // claimed and not done (the caller waits for all of them).
  std::atomic<uint64_t> state_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> stop_{false};
  Fn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::vector<std::thread> workers_;
};

}  // namespace llmport::cpu
