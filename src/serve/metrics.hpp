#pragma once
// Server metrics, rendered in the Prometheus text exposition format (names prefixed
// llmport_). Thread-safe: the HTTP threads and the scheduler record concurrently.
#include <array>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace llmport::serve {

/// A cumulative histogram over fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
  void observe(double v);
  /// Lines `<name>_bucket{le="..."} N`, `_sum`, `_count`.
  void render(std::string& out, const std::string& name) const;
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative)
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  /// A finished HTTP exchange: endpoint is the route ("/v1/completions", ... or "other").
  void request(const std::string& endpoint, int status);
  void prompt_tokens(int n);
  void generated_tokens(int n);
  void time_to_first_token(double seconds);
  void inter_token_latency(double seconds);
  /// Gauges, set by the scheduler after every step.
  void set_load(int active, int queued, int slots_in_use, int slots_total);
  /// The Prometheus text (text/plain; version=0.0.4).
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
  Histogram ttft_, itl_;
  int active_ = 0, queued_ = 0, slots_in_use_ = 0, slots_total_ = 0;
};

}  // namespace llmport::serve
