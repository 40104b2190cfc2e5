#include "serve/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

#include "llmport/error.hpp"
#include "llmport/generate.hpp"

namespace llmport::serve {

// ---- Generation ----------------------------------------------------------------------

Generation::Wait Generation::next(TokenEvent& ev, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu_);
  if (!cv_.wait_for(l, timeout, [&] { return !events_.empty() || done_; })) return Wait::Timeout;
  if (!events_.empty()) {
    ev = std::move(events_.front());
    events_.pop_front();
    return Wait::Token;
  }
  return Wait::Done;
}

std::string Generation::finish_reason() const {
  std::lock_guard<std::mutex> l(mu_);
  return reason_;
}

std::string Generation::error() const {
  std::lock_guard<std::mutex> l(mu_);
  return error_;
}

void Generation::push(TokenEvent ev) {
  {
    std::lock_guard<std::mutex> l(mu_);
    events_.push_back(std::move(ev));
  }
  cv_.notify_all();
}

void Generation::finish(const std::string& reason, const std::string& error) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (done_) return;
    done_ = true;
    reason_ = reason;
    error_ = error;
  }
  cv_.notify_all();
}

// ---- Scheduler -----------------------------------------------------------------------

Scheduler::Scheduler(Engine& engine, int queue, int prefill_chunk, Metrics& metrics, int step_delay_ms)
    : engine_(engine), slots_(engine.n_slots()), queue_cap_(queue),
      prefill_chunk_(std::max(1, prefill_chunk)), step_delay_ms_(step_delay_ms), metrics_(metrics) {
  for (int s = slots_ - 1; s >= 0; --s) free_slots_.push_back(s);
  metrics_.set_load(0, 0, 0, slots_);
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { stop(); }

std::shared_ptr<Generation> Scheduler::submit(GenerationParams p) {
  auto s = std::make_unique<Seq>();
  s->gen = std::make_shared<Generation>();
  s->sampler = std::make_unique<Sampler>(p.sampling);
  s->history = p.prompt;
  s->p = std::move(p);
  s->submitted = std::chrono::steady_clock::now();
  auto gen = s->gen;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return nullptr;
    if (n_active_.load() + static_cast<int>(waiting_.size()) >= slots_ + queue_cap_) return nullptr;
    waiting_.push_back(std::move(s));
  }
  cv_.notify_all();
  return gen;
}

int Scheduler::active() const { return n_active_.load(); }

int Scheduler::queued() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(waiting_.size());
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> l(mu_);
  for (auto& s : waiting_) s->gen->finish("cancelled");
  waiting_.clear();
  for (auto& s : running_) s->gen->finish("cancelled");
  running_.clear();
  n_active_.store(0);
}

void Scheduler::cancel_queued() {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& s : waiting_) s->gen->finish("cancelled");
  waiting_.clear();
}

void Scheduler::release(Seq& s, const std::string& reason, const std::string& error) {
  s.gen->finish(reason, error);
  if (s.slot >= 0) {
    free_slots_.push_back(s.slot);
    s.slot = -1;
    std::lock_guard<std::mutex> l(mu_);
    n_active_.fetch_sub(1);
  }
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !waiting_.empty() || !running_.empty(); });
      if (stop_) return;
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        if ((*it)->gen->cancelled()) {
          (*it)->gen->finish("cancelled");
          it = waiting_.erase(it);
        } else {
          ++it;
        }
      }
      while (!free_slots_.empty() && !waiting_.empty()) {
        auto s = std::move(waiting_.front());
        waiting_.pop_front();
        s->slot = free_slots_.back();
        free_slots_.pop_back();
        engine_.reset_slot(s->slot);
        metrics_.prompt_tokens(static_cast<int>(s->p.prompt.size()));
        running_.push_back(std::move(s));
        n_active_.fetch_add(1);
      }
    }
    if (step() && step_delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_delay_ms_));
    const int active = n_active_.load();
    metrics_.set_load(active, queued(), slots_ - static_cast<int>(free_slots_.size()), slots_);
  }
}

bool Scheduler::step() {
  for (auto& s : running_)
    if (s->gen->cancelled()) release(*s, "cancelled");
  std::erase_if(running_, [](const auto& s) { return s->slot < 0; });
  if (running_.empty()) return false;

  // Decode tokens first (one per decoding sequence), then prompt chunks within the budget.
  std::vector<BatchItem> items;
  std::vector<Seq*> owner;
  for (auto& s : running_)
    if (s->fed == s->p.prompt.size()) {
      items.push_back({s->slot, std::span<const int>(&s->next, 1)});
      owner.push_back(s.get());
    }
  int budget = prefill_chunk_;
  for (auto& s : running_) {
    if (s->fed == s->p.prompt.size() || budget <= 0) continue;
    const std::size_t len = std::min<std::size_t>(static_cast<std::size_t>(budget), s->p.prompt.size() - s->fed);
    items.push_back({s->slot, std::span<const int>(s->p.prompt.data() + s->fed, len)});
    owner.push_back(s.get());
    budget -= static_cast<int>(len);
  }
  std::vector<float> logits;
  try {
    logits = engine_.forward_batch(items);
  } catch (const std::exception& e) {
    for (Seq* s : owner) release(*s, "error", e.what());
    std::erase_if(running_, [](const auto& s) { return s->slot < 0; });
    return true;
  }
  const std::size_t V = static_cast<std::size_t>(engine_.config().vocab_size);
  for (std::size_t j = 0; j < items.size(); ++j) {
    Seq& s = *owner[j];
    if (s.fed < s.p.prompt.size()) {
      s.fed += items[j].tokens.size();
      if (s.fed < s.p.prompt.size()) continue;  // more prompt to prefill
    }
    emit(s, std::span<const float>(logits.data() + j * V, V));
  }
  std::erase_if(running_, [](const auto& s) { return s->slot < 0; });
  return true;
}

void Scheduler::emit(Seq& s, std::span<const float> logits) {
  // The run path's check (check_finite_logits): NaN/Inf, or all one value (a collapsed
  // forward pass), would sample arbitrary ids.
  try {
    check_finite_logits(logits, s.generated, static_cast<long>(s.p.prompt.size()) - 1 + s.generated);
  } catch (const GateError& e) {
    return release(s, "error", e.what());
  }
  TokenEvent ev;
  ev.id = s.sampler->sample(logits, s.history);
  // log-softmax of the raw logits: the model's distribution, whatever the sampling.
  float mx = logits[0];
  for (float l : logits) mx = std::max(mx, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
  const double lse = mx + std::log(sum);
  ev.logprob = static_cast<float>(logits[static_cast<std::size_t>(ev.id)] - lse);
  if (s.p.top_logprobs > 0)
    for (const auto& [id, l] : top_k_logits(logits, s.p.top_logprobs))
      ev.top.emplace_back(id, static_cast<float>(l - lse));

  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - (s.generated == 0 ? s.submitted : s.last_token)).count();
  if (s.generated == 0) metrics_.time_to_first_token(dt);
  else metrics_.inter_token_latency(dt);
  s.last_token = now;
  metrics_.generated_tokens(1);

  const int id = ev.id;
  if (std::find(s.p.stop_ids.begin(), s.p.stop_ids.end(), id) != s.p.stop_ids.end())
    return release(s, "stop");
  s.gen->push(std::move(ev));
  ++s.generated;
  s.history.push_back(id);
  s.next = id;
  if (s.generated >= s.p.max_tokens || engine_.slot_pos(s.slot) >= engine_.max_seq())
    return release(s, "length");
}

}  // namespace llmport::serve
