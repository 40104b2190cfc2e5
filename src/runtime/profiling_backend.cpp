// The profiling backend: wall time of every op call, under the names `--profile` prints
// (one name per op and role: the three linears of a layer are told apart).
#include "runtime/decorators.hpp"

namespace llmport {
namespace {

const char* linear_name(OpRole r) {
  switch (r) {
    case OpRole::Qkv: return "linear_qkv";
    case OpRole::GateUp: return "linear_gate_up";
    case OpRole::O: return "linear_o";
    case OpRole::Down: return "linear_down";
    case OpRole::LmHead: return "lm_head";
    default: return "linear";
  }
}

class ProfilingBackend final : public ForwardingBackend {
 public:
  ProfilingBackend(Backend& inner, Profiler& prof) : ForwardingBackend(inner), prof_(prof) {}

  void linear(const LinearWeight& w, const float* x, int m, float* y, const float* bias,
              OpTag tag) override {
    Profiler::Scope s(prof_, linear_name(tag.role));
    inner().linear(w, x, m, y, bias, tag);
  }
  void linear_group(std::span<const LinearCall> calls, const float* x, int m, OpTag tag) override {
    Profiler::Scope s(prof_, linear_name(tag.role));
    inner().linear_group(calls, x, m, tag);
  }
  void embedding(const TensorView& table, DType compute, const int* ids, int m, float* out,
                 OpTag tag) override {
    Profiler::Scope s(prof_, "embedding");
    inner().embedding(table, compute, ids, m, out, tag);
  }
  void gather_rows(const LinearWeight& w, const int* rows, int m, float* out, OpTag tag) override {
    Profiler::Scope s(prof_, "embedding");
    inner().gather_rows(w, rows, m, out, tag);
  }
  void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps,
               OpTag tag) override {
    const bool qk = tag.role == OpRole::Q || tag.role == OpRole::K;
    Profiler::Scope s(prof_, qk ? "qk_norm" : "rmsnorm");
    inner().rmsnorm(x, w, y, m, dim, eps, tag);
  }
  void rope(float* x, int m, int n_heads, int head_dim, const int* positions,
            const float* inv_freq, OpTag tag) override {
    Profiler::Scope s(prof_, "rope");
    inner().rope(x, m, n_heads, head_dim, positions, inv_freq, tag);
  }
  void kv_store(const KvStoreArgs& a, OpTag tag) override {
    Profiler::Scope s(prof_, "kv_store");
    inner().kv_store(a, tag);
  }
  void attention(const AttentionArgs& a, OpTag tag) override {
    Profiler::Scope s(prof_, "attention");
    inner().attention(a, tag);
  }
  void swiglu(const float* gate, const float* up, float* out, std::size_t n, OpTag tag) override {
    Profiler::Scope s(prof_, "swiglu");
    inner().swiglu(gate, up, out, n, tag);
  }
  void add(float* x, const float* y, std::size_t n, OpTag tag) override {
    Profiler::Scope s(prof_, "add");
    inner().add(x, y, n, tag);
  }

 private:
  Profiler& prof_;
};

}  // namespace

std::unique_ptr<Backend> make_profiling_backend(Backend& inner, Profiler& prof) {
  return std::make_unique<ProfilingBackend>(inner, prof);
}

}  // namespace llmport
