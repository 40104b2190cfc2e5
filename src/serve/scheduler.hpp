#pragma once
// The slot scheduler: continuous batching over the engine's sequence slots. One thread
// owns the engine. Every step it admits queued requests into free slots, then runs one
// Engine::forward_batch over every decoding sequence (one token each) plus prompt chunks of
// the sequences still prefilling (at most prefill_chunk prompt tokens per step in all, so a
// long prompt delays the others' next token by one chunk at most), samples each sequence's
// next token and hands it to the request's Generation. A finished or cancelled sequence
// frees its slot at once.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "llmport/engine.hpp"
#include "llmport/sampler.hpp"
#include "serve/metrics.hpp"

namespace llmport::serve {

/// What a sequence generates.
struct GenerationParams {
  std::vector<int> prompt;      ///< token ids (>= 1)
  int max_tokens = 16;          ///< generated tokens at most (>= 1)
  SamplingParams sampling;
  std::vector<int> stop_ids;    ///< end of sequence (not emitted; finish_reason "stop")
  int top_logprobs = 0;         ///< alternatives (id, logprob) recorded per token
};

/// One generated token with its log-probability (log-softmax of the logits) and the
/// top_logprobs best alternatives, descending.
struct TokenEvent {
  int id = -1;
  float logprob = 0;
  std::vector<std::pair<int, float>> top;
};

/// A request's generation, shared by the scheduler (producer) and the HTTP thread.
class Generation {
 public:
  enum class Wait { Token, Done, Timeout };
  /// Waits up to `timeout` for the next token. Done when the generation has finished and
  /// every token was taken (finish_reason() then tells why).
  Wait next(TokenEvent& ev, std::chrono::milliseconds timeout);
  /// Asks the scheduler to stop this generation and free its slot (client gone, stop
  /// string matched). Idempotent.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  /// "stop" | "length" | "cancelled" | "error" (valid once next() returned Done).
  std::string finish_reason() const;
  std::string error() const;

  // Producer side (the scheduler).
  void push(TokenEvent ev);
  void finish(const std::string& reason, const std::string& error = "");

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<TokenEvent> events_;
  bool done_ = false;
  std::string reason_, error_;
  std::atomic<bool> cancelled_{false};
};

class Scheduler {
 public:
  /// `engine` has `parallel` = engine.n_slots() slots; `queue` requests may wait beyond.
  /// step_delay_ms: test-only pause after every step (makes a tiny model slow enough to
  /// observe cancellation, backpressure and draining).
  Scheduler(Engine& engine, int queue, int prefill_chunk, Metrics& metrics, int step_delay_ms = 0);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Queues a generation; null when parallel + queue requests are already admitted (429).
  std::shared_ptr<Generation> submit(GenerationParams p);
  /// Requests holding a slot / waiting for one.
  int active() const;
  int queued() const;
  /// Cancels everything still running or queued and joins the thread.
  void stop();
  /// Cancels the requests still waiting for a slot (shutdown: they would never start).
  void cancel_queued();

 private:
  struct Seq {
    std::shared_ptr<Generation> gen;
    GenerationParams p;
    std::unique_ptr<Sampler> sampler;
    std::vector<int> history;  // prompt + generated (repetition penalty)
    int slot = -1;
    std::size_t fed = 0;       // prompt tokens prefilled
    int next = -1;             // token to feed in the next decode step
    int generated = 0;
    std::chrono::steady_clock::time_point submitted, last_token;
  };
  void loop();
  bool step();  // one forward; false when there was nothing to run
  void emit(Seq& s, std::span<const float> logits);
  void release(Seq& s, const std::string& reason, const std::string& error = "");

  Engine& engine_;
  const int slots_, queue_cap_, prefill_chunk_, step_delay_ms_;
  Metrics& metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Seq>> waiting_;   // guarded by mu_
  std::vector<std::unique_ptr<Seq>> running_;  // scheduler thread only
  std::vector<int> free_slots_;                // scheduler thread only
  std::atomic<int> n_active_{0};
  bool stop_ = false;                          // guarded by mu_
  std::thread thread_;
};

}  // namespace llmport::serve
