#include "serve/metrics.hpp"

#include <fmt/format.h>

namespace llmport::serve {

void Histogram::observe(double v) {
  for (std::size_t i = 0; i < bounds_.size(); ++i)
    if (v <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name) const {
  uint64_t cum = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cum);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

void Metrics::request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> l(mu_);
  ++requests_[{endpoint, status}];
}
void Metrics::prompt_tokens(int n) {
  std::lock_guard<std::mutex> l(mu_);
  prompt_tokens_ += static_cast<uint64_t>(n);
}
void Metrics::generated_tokens(int n) {
  std::lock_guard<std::mutex> l(mu_);
  generated_tokens_ += static_cast<uint64_t>(n);
}
void Metrics::time_to_first_token(double s) {
  std::lock_guard<std::mutex> l(mu_);
  ttft_.observe(s);
}
void Metrics::inter_token_latency(double s) {
  std::lock_guard<std::mutex> l(mu_);
  itl_.observe(s);
}
void Metrics::set_load(int active, int queued, int slots_in_use, int slots_total) {
  std::lock_guard<std::mutex> l(mu_);
  active_ = active;
  queued_ = queued;
  slots_in_use_ = slots_in_use;
  slots_total_ = slots_total;
}

std::string Metrics::render() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string o;
  o += "# HELP llmport_requests_total HTTP requests answered, by endpoint and status.\n"
       "# TYPE llmport_requests_total counter\n";
  for (const auto& [k, n] : requests_)
    o += fmt::format("llmport_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", k.first, k.second, n);
  o += "# HELP llmport_prompt_tokens_total Prompt tokens prefilled.\n"
       "# TYPE llmport_prompt_tokens_total counter\n";
  o += fmt::format("llmport_prompt_tokens_total {}\n", prompt_tokens_);
  o += "# HELP llmport_generated_tokens_total Tokens generated.\n"
       "# TYPE llmport_generated_tokens_total counter\n";
  o += fmt::format("llmport_generated_tokens_total {}\n", generated_tokens_);
  o += "# HELP llmport_time_to_first_token_seconds From admission to the first generated token.\n"
       "# TYPE llmport_time_to_first_token_seconds histogram\n";
  ttft_.render(o, "llmport_time_to_first_token_seconds");
  o += "# HELP llmport_inter_token_latency_seconds Between consecutive tokens of a sequence.\n"
       "# TYPE llmport_inter_token_latency_seconds histogram\n";
  itl_.render(o, "llmport_inter_token_latency_seconds");
  o += "# HELP llmport_requests_active Requests holding a sequence slot.\n"
       "# TYPE llmport_requests_active gauge\n";
  o += fmt::format("llmport_requests_active {}\n", active_);
  o += "# HELP llmport_requests_queued Requests waiting for a slot.\n"
       "# TYPE llmport_requests_queued gauge\n";
  o += fmt::format("llmport_requests_queued {}\n", queued_);
  o += "# HELP llmport_kv_cache_slots_in_use KV-cache sequence slots in use.\n"
       "# TYPE llmport_kv_cache_slots_in_use gauge\n";
  o += fmt::format("llmport_kv_cache_slots_in_use {}\n", slots_in_use_);
  o += "# HELP llmport_kv_cache_slots_total KV-cache sequence slots (--parallel).\n"
       "# TYPE llmport_kv_cache_slots_total gauge\n";
  o += fmt::format("llmport_kv_cache_slots_total {}\n", slots_total_);
  return o;
}

}  // namespace llmport::serve
