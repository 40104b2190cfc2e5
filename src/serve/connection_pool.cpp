#include "serve/connection_pool.hpp"

#include <sys/socket.h>

namespace llmport::serve {

using Clock = std::chrono::steady_clock;

struct ConnectionPool::Slot {
  ConnectionPool* pool = nullptr;
  int socket = -1;  ///< the connection's, while it may be shut down; -1 otherwise
  ConnPhase phase = ConnPhase::Waiting;
  Clock::time_point since;  ///< when `phase` began
  bool evicted = false;     ///< shut down by the pool; its thread is about to be free
};

namespace {
thread_local ConnectionPool::Slot* t_slot = nullptr;
thread_local bool t_refusing = false;
}  // namespace

// The pool's mutex guards every slot: a slot's socket is shut down only under it, and the
// loop sets -1 under it before close(2), so a descriptor reused by another connection is
// never shut down.
struct PoolAccess {
  static std::mutex& mu(ConnectionPool& p) { return p.mu_; }
  static bool stopping(const ConnectionPool& p) { return p.stop_; }
};

void connection_phase(ConnPhase phase, int socket) {
  ConnectionPool::Slot* s = t_slot;
  if (!s) return;
  std::lock_guard<std::mutex> lock(PoolAccess::mu(*s->pool));
  s->phase = phase;
  s->socket = socket;
  s->since = Clock::now();
  // Shutting down: a connection back on its client after its answer reads no next request.
  if (PoolAccess::stopping(*s->pool) && phase == ConnPhase::Waiting && socket >= 0) ::shutdown(socket, SHUT_RDWR);
}

bool connection_refused() { return t_refusing; }

ConnectionPool::ConnectionPool(std::size_t threads) {
  if (threads == 0) threads = 1;
  for (std::size_t i = 0; i < threads; ++i) {
    auto* s = new Slot;
    s->pool = this;
    slots_.push_back(s);
  }
  for (Slot* s : slots_) threads_.emplace_back([this, s] { work(*s); });
  refuser_ = std::thread([this] { refuse_loop(); });
  warden_ = std::thread([this] { warden_loop(); });
}

ConnectionPool::~ConnectionPool() {
  shutdown();
  for (Slot* s : slots_) delete s;
}

void ConnectionPool::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) return;
  jobs_.push_back({std::move(fn), Clock::now()});
  make_room();
  cv_.notify_one();
}

// Queued connections beyond the threads that are free (or about to be: an ended
// connection's loop returning) take the threads of connections waiting on their clients.
void ConnectionPool::make_room() {
  while (jobs_.size() > idle_ + evicting_ && evict_one()) {
  }
}

// Every kWardenTick: room made for queued connections (a waiting connection may have
// become old enough to end), and those queued kMaxQueueWait without a thread are refused.
void ConnectionPool::warden_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    warden_cv_.wait_for(lock, kWardenTick);
    make_room();
    bool moved = false;
    while (jobs_.size() > idle_ + evicting_ && Clock::now() - jobs_.front().at >= kMaxQueueWait) {
      refused_.push_back(std::move(jobs_.front().fn));
      jobs_.pop_front();
      moved = true;
    }
    if (moved) refuse_cv_.notify_one();
  }
}

// The connection that has waited longest on its client, at least kMinWaitToEnd (a request
// whose head or body is still arriving, or an idle one), is ended: shutdown(2) makes its
// thread's poll and recv return at once (end of stream), and its loop closes it.
bool ConnectionPool::evict_one() {
  Slot* victim = nullptr;
  const auto cutoff = Clock::now() - kMinWaitToEnd;
  for (Slot* s : slots_)
    if (s->socket >= 0 && s->phase == ConnPhase::Waiting && !s->evicted && s->since <= cutoff &&
        (!victim || s->since < victim->since))
      victim = s;
  if (!victim) return false;
  ::shutdown(victim->socket, SHUT_RDWR);
  victim->evicted = true;
  ++evicting_;
  return true;
}

void ConnectionPool::work(Slot& slot) {
  t_slot = &slot;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) break;  // stopping, nothing left
    std::function<void()> fn = std::move(jobs_.front().fn);
    jobs_.pop_front();
    slot.socket = -1;
    slot.phase = ConnPhase::Waiting;
    lock.unlock();
    fn();
    lock.lock();
    slot.socket = -1;
    if (slot.evicted) {
      slot.evicted = false;
      --evicting_;
    }
  }
}

void ConnectionPool::refuse_loop() {
  t_refusing = true;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    refuse_cv_.wait(lock, [&] { return stop_ || !refused_.empty(); });
    if (refused_.empty()) break;
    std::function<void()> fn = std::move(refused_.front());
    refused_.pop_front();
    lock.unlock();
    fn();  // the connection loop answers 503 and closes (connection_refused())
    lock.lock();
  }
}

void ConnectionPool::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && threads_.empty()) return;
    stop_ = true;
    // The grace period is over (the server stops the listener after it): connections
    // still on their clients end now. A request head or body still arriving (a client
    // trickling one byte per read timeout) held its thread, so this join, for as long as
    // the client kept sending. Connections whose answer is being written finish it.
    for (Slot* s : slots_)
      if (s->socket >= 0 && s->phase == ConnPhase::Waiting) ::shutdown(s->socket, SHUT_RDWR);
  }
  cv_.notify_all();
  refuse_cv_.notify_all();
  warden_cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (warden_.joinable()) warden_.join();
  if (refuser_.joinable()) refuser_.join();
}

}  // namespace llmport::serve
