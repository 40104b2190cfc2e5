#pragma once
// Per-op wall-clock accumulation for `--profile`. When disabled, a Scope costs one branch.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "llmport/engine.hpp"

namespace llmport {

class Profiler {
 public:
  class Scope {
   public:
    Scope(Profiler& p, const char* op) : p_(p.on_ ? &p : nullptr), op_(op) {
      if (p_) t0_ = std::chrono::steady_clock::now();
    }
    ~Scope() {
      if (!p_) return;
      const auto dt = std::chrono::steady_clock::now() - t0_;
      auto& e = p_->ops_[op_];
      e.ms += std::chrono::duration<double, std::milli>(dt).count();
      ++e.calls;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Profiler* p_;
    const char* op_;
    std::chrono::steady_clock::time_point t0_;
  };

  void enable(bool on) { on_ = on; }
  bool enabled() const { return on_; }
  void clear() { ops_.clear(); }
  /// Ops sorted by descending total time.
  std::vector<OpProfile> report() const;

 private:
  struct Entry {
    double ms = 0;
    uint64_t calls = 0;
  };
  bool on_ = false;
  std::map<std::string, Entry> ops_;
};

}  // namespace llmport
