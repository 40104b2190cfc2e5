#pragma once
// The pool of threads that serve connections (httplib's TaskQueue: one job per accepted
// connection, the job runs the whole connection on its thread).
//
// httplib 0.11's ThreadPool queues a connection that finds every thread busy, unbounded and
// for as long as the busy ones take: idle keep-alive connections, clients trickling a head
// within --read-timeout, or clients that connect and send nothing held every thread, and a
// well-behaved client waited behind them (up to the read timeout each, 32 s by default) or
// for ever while they kept reconnecting. This pool instead, for a connection that finds no
// free thread:
//  - ends the connection that has waited longest (at least kMinWaitToEnd) on its client:
//    idle between requests, a request head or body still arriving, or a lingering close
//    draining. shutdown(2) wakes its thread at once; the new connection takes that thread.
//    A connection whose request is being answered (a generation, a stream) is never ended;
//  - when there is none, the connection waits for a thread, at most kMaxQueueWait; then it
//    runs on a refusal thread, where the connection loop answers it 503 (OpenAI error JSON,
//    Retry-After: 1) and closes it.
// The connection loop (serve/http_connection.cpp) tells the pool its phase through
// connection_phase(); a thread not of this pool ignores it.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace llmport::serve {

enum class ConnPhase {
  Waiting,   ///< on the client: idle between requests, reading a head or body, lingering close
  Handling,  ///< a complete request is being answered (never ended by the pool)
};

/// The phase of the connection served on the calling thread: `socket` while it is one of
/// this pool's threads (the pool may shut it down while Waiting). -1 = the connection ended
/// (before close(2): the pool never shuts down a reused descriptor).
void connection_phase(ConnPhase phase, int socket);

/// True on a refusal thread: the connection is to be answered 503 and closed at once.
bool connection_refused();

struct PoolAccess;

class ConnectionPool final : public httplib::TaskQueue {
 public:
  /// A connection waiting on its client for less is not ended for another (its request is
  /// most likely on its way: a client that sent it at once is never cut off).
  static constexpr std::chrono::milliseconds kMinWaitToEnd{250};
  /// A connection without a thread for this long is answered 503.
  static constexpr std::chrono::milliseconds kMaxQueueWait{1000};
  static constexpr std::chrono::milliseconds kWardenTick{50};

  /// `threads` connection threads (>= 1) and one refusal thread.
  explicit ConnectionPool(std::size_t threads);
  ~ConnectionPool() override;
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

  struct Slot;  // connection_pool.cpp

 private:
  friend struct PoolAccess;
  struct Job {
    std::function<void()> fn;
    std::chrono::steady_clock::time_point at;  ///< when it was queued
  };
  void work(Slot& slot);
  void refuse_loop();
  void warden_loop();
  void make_room();  // with mu_ held
  bool evict_one();  // with mu_ held

  std::mutex mu_;
  std::condition_variable cv_, refuse_cv_, warden_cv_;
  std::deque<Job> jobs_;
  std::deque<std::function<void()>> refused_;
  std::vector<Slot*> slots_;
  std::vector<std::thread> threads_;
  std::thread refuser_, warden_;
  std::size_t idle_ = 0, evicting_ = 0;
  bool stop_ = false;
};

}  // namespace llmport::serve
