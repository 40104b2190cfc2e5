#include "kernels/cpu/work_pool.hpp"

#include <immintrin.h>

namespace llmport::cpu {

namespace {
// state_ layout: [generation:16 | n_chunks:24 | next chunk:24].
constexpr uint32_t gen_of(uint64_t s) { return static_cast<uint32_t>(s >> 48); }
constexpr uint32_t total_of(uint64_t s) { return static_cast<uint32_t>(s >> 24) & 0xffffffu; }
constexpr uint32_t next_of(uint64_t s) { return static_cast<uint32_t>(s) & 0xffffffu; }
constexpr uint64_t make_state(uint32_t gen, uint32_t total) {
  return (static_cast<uint64_t>(gen & 0xffffu) << 48) | (static_cast<uint64_t>(total) << 24);
}
// Spin this many pause iterations (~0.1-0.3 ms) before sleeping: a decode step issues
// regions every few microseconds, so the worker stays hot during generation and sleeps
// when the engine is idle.
constexpr int kSpin = 20000;
}  // namespace

WorkPool::WorkPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

WorkPool::~WorkPool() {
  stop_.store(true, std::memory_order_release);
  const uint32_t gen = gen_of(state_.load(std::memory_order_relaxed)) + 1;
  state_.store(make_state(gen, 0), std::memory_order_release);  // a new generation wakes all
  state_.notify_all();
  for (auto& t : workers_) t.join();
}

int WorkPool::claim() {
  uint64_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    if (next_of(s) >= total_of(s)) return -1;
    if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire))
      return static_cast<int>(next_of(s));
  }
}

void WorkPool::run_erased(int n_chunks, Fn fn, void* ctx) {
  if (n_chunks > 0xffffff) n_chunks = 0xffffff;  // callers cut far fewer chunks
  fn_ = fn;
  ctx_ = ctx;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t gen = gen_of(state_.load(std::memory_order_relaxed)) + 1;
  state_.store(make_state(gen, static_cast<uint32_t>(n_chunks)), std::memory_order_release);
  state_.notify_all();
  int mine = 0;
  for (int c; (c = claim()) >= 0; ++mine) fn(ctx, c, 0);
  if (mine < n_chunks) {
    const int expect = n_chunks - mine;
    while (done_.load(std::memory_order_acquire) < expect) _mm_pause();
  }
}

void WorkPool::worker_loop(int slot) {
  uint32_t seen = 0;
  for (;;) {
    uint64_t s = state_.load(std::memory_order_acquire);
    for (int i = 0; gen_of(s) == seen && i < kSpin; ++i) {
      _mm_pause();
      s = state_.load(std::memory_order_acquire);
    }
    while (gen_of(s) == seen) {  // sleep on the whole word: any change wakes
      state_.wait(s, std::memory_order_acquire);
      s = state_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = gen_of(s);
    // A successful claim is always of the current generation (a finished one has
    // next == n_chunks), and it cannot end while this worker holds an undone chunk of
    // it, so fn_/ctx_ are read only after a claim.
    for (int c; (c = claim()) >= 0;) {
      fn_(ctx_, c, slot);
      done_.fetch_add(1, std::memory_order_release);
    }
  }
}

}  // namespace llmport::cpu
