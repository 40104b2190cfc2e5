#pragma once
// A Backend that forwards every call to another one: the base of decorators that act on
// tagged op calls (fault injection, profiling, probes in src/runtime/; planted faults in
// tests) without the forward pass or the wrapped backend knowing they exist. Override only
// the ops a decorator changes.
#include <memory>
#include <utility>

#include "llmport/kernels.hpp"

namespace llmport {

class ForwardingBackend : public Backend {
 public:
  /// Wraps `inner`, which must outlive this decorator (Engine keeps both).
  explicit ForwardingBackend(Backend& inner) : in_(inner) {}
  /// Wraps and owns `inner`.
  explicit ForwardingBackend(std::unique_ptr<Backend> inner) : owned_(std::move(inner)), in_(*owned_) {}

  Backend& inner() { return in_; }
  std::string name() const override { return in_.name(); }
  std::string isa() const override { return in_.isa(); }
  void set_threads(int n) override { in_.set_threads(n); }
  int threads() const override { return in_.threads(); }
  void set_batch_invariant(bool on) override { in_.set_batch_invariant(on); }
  bool supports(const OpDesc& op) const override { return in_.supports(op); }
  TileSchema tile_schema(OpKind kind) const override { return in_.tile_schema(kind); }
  TileConfig default_tiles(const OpDesc& op) const override { return in_.default_tiles(op); }
  std::vector<TileConfig> tile_candidates(const OpDesc& op) const override {
    return in_.tile_candidates(op);
  }
  void retile(LinearWeight& w, const TileConfig& cfg) override { in_.retile(w, cfg); }
  std::size_t packed_size(int n, int k, DType dtype) const override {
    return in_.packed_size(n, k, dtype);
  }
  std::unique_ptr<LinearWeight> linear_from_packed(int n, int k, DType dtype, const TileConfig& cfg,
                                                   std::span<const std::byte> bytes) override {
    return in_.linear_from_packed(n, k, dtype, cfg, bytes);
  }
  std::unique_ptr<LinearWeight> read_packed_linear(
      int n, int k, DType dtype, const TileConfig& cfg,
      const std::function<bool(std::span<std::byte>)>& read) override {
    return in_.read_packed_linear(n, k, dtype, cfg, read);
  }
  std::unique_ptr<LinearWeight> make_linear(const TensorView& w, DType compute,
                                            const TileConfig& cfg = {}) override {
    return in_.make_linear(w, compute, cfg);
  }
  std::size_t quantized_packed_size(int n, int k, QuantType q) const override {
    return in_.quantized_packed_size(n, k, q);
  }
  std::unique_ptr<LinearWeight> read_quantized_linear(
      int n, int k, QuantType q, const TileConfig& cfg,
      const std::function<bool(std::span<std::byte>)>& read) override {
    return in_.read_quantized_linear(n, k, q, cfg, read);
  }
  std::unique_ptr<LinearWeight> make_quantized_linear(const TensorView& w, QuantType quant,
                                                      const TileConfig& cfg = {}) override {
    return in_.make_quantized_linear(w, quant, cfg);
  }
  void linear(const LinearWeight& w, const float* x, int m, float* y, const float* bias = nullptr,
              OpTag tag = {}) override {
    in_.linear(w, x, m, y, bias, tag);
  }
  void linear_group(std::span<const LinearCall> calls, const float* x, int m,
                    OpTag tag = {}) override {
    in_.linear_group(calls, x, m, tag);
  }
  void embedding(const TensorView& table, DType compute, const int* ids, int m, float* out,
                 OpTag tag = {}) override {
    in_.embedding(table, compute, ids, m, out, tag);
  }
  void gather_rows(const LinearWeight& w, const int* rows, int m, float* out,
                   OpTag tag = {}) override {
    in_.gather_rows(w, rows, m, out, tag);
  }
  void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps,
               OpTag tag = {}) override {
    in_.rmsnorm(x, w, y, m, dim, eps, tag);
  }
  void rope(float* x, int m, int n_heads, int head_dim, const int* positions,
            const float* inv_freq, OpTag tag = {}) override {
    in_.rope(x, m, n_heads, head_dim, positions, inv_freq, tag);
  }
  void kv_store(const KvStoreArgs& a, OpTag tag = {}) override { in_.kv_store(a, tag); }
  void attention(const AttentionArgs& a, OpTag tag = {}) override { in_.attention(a, tag); }
  void swiglu(const float* gate, const float* up, float* out, std::size_t n,
              OpTag tag = {}) override {
    in_.swiglu(gate, up, out, n, tag);
  }
  void add(float* x, const float* y, std::size_t n, OpTag tag = {}) override {
    in_.add(x, y, n, tag);
  }
  double read_bandwidth_gbps(std::span<const LinearWeight* const> weights, int passes) override {
    return in_.read_bandwidth_gbps(weights, passes);
  }
  /// The wrapped backend's counters: a decorator serves no call itself.
  const DispatchCounters& counters() const override { return in_.counters(); }
  void reset_counters() override { in_.reset_counters(); }

 private:
  std::unique_ptr<Backend> owned_;
  Backend& in_;
};

}  // namespace llmport
