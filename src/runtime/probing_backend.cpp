// The probing backend: reports the activations engine.hpp's ProbeFn names right after the
// tagged calls that produce them (q and k after bias, q/k norm and RoPE: what attention reads).
#include "runtime/decorators.hpp"

namespace llmport {
namespace {

class ProbingBackend final : public ForwardingBackend {
 public:
  ProbingBackend(Backend& inner, ProbeFn fn, const ModelConfig& cfg)
      : ForwardingBackend(inner), fn_(std::move(fn)), emb_(cfg.emb_dim) {}

  void embedding(const TensorView& table, DType compute, const int* ids, int m, float* out,
                 OpTag tag) override {
    inner().embedding(table, compute, ids, m, out, tag);
    if (tag.role == OpRole::Embedding) fn_("embedding", -1, out, m, static_cast<int>(table.shape[1]));
  }
  void gather_rows(const LinearWeight& w, const int* rows, int m, float* out, OpTag tag) override {
    inner().gather_rows(w, rows, m, out, tag);
    if (tag.role == OpRole::Embedding) fn_("embedding", -1, out, m, w.n_in);
  }
  void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps,
               OpTag tag) override {
    inner().rmsnorm(x, w, y, m, dim, eps, tag);
    if (tag.role == OpRole::AttnNorm) fn_("attn_norm", tag.layer, y, m, dim);
    if (tag.role == OpRole::FfnNorm) fn_("ffn_norm", tag.layer, y, m, dim);
    if (tag.role == OpRole::FinalNorm) fn_("final_norm", -1, y, m, dim);
  }
  void linear_group(std::span<const LinearCall> calls, const float* x, int m, OpTag tag) override {
    inner().linear_group(calls, x, m, tag);
    for (const LinearCall& c : calls)
      if (c.role == OpRole::V) fn_("v", tag.layer, c.y, m, c.w->n_out);
  }
  void rope(float* x, int m, int n_heads, int head_dim, const int* positions,
            const float* inv_freq, OpTag tag) override {
    inner().rope(x, m, n_heads, head_dim, positions, inv_freq, tag);
    if (tag.role == OpRole::Q) fn_("q", tag.layer, x, m, n_heads * head_dim);
    if (tag.role == OpRole::K) fn_("k", tag.layer, x, m, n_heads * head_dim);
  }
  void linear(const LinearWeight& w, const float* x, int m, float* y, const float* bias,
              OpTag tag) override {
    inner().linear(w, x, m, y, bias, tag);
    if (tag.role == OpRole::O) fn_("attn_out", tag.layer, y, m, w.n_out);
    if (tag.role == OpRole::Down) fn_("ffn_out", tag.layer, y, m, w.n_out);
  }
  // The residual after the FFN is the layer's output (HF hidden_states[layer + 1]).
  void add(float* x, const float* y, std::size_t n, OpTag tag) override {
    inner().add(x, y, n, tag);
    if (tag.role == OpRole::FfnResidual)
      fn_("layer_out", tag.layer, x, static_cast<int>(n / static_cast<std::size_t>(emb_)), emb_);
  }

 private:
  ProbeFn fn_;
  int emb_;
};

}  // namespace

std::unique_ptr<Backend> make_probing_backend(Backend& inner, ProbeFn fn, const ModelConfig& cfg) {
  return std::make_unique<ProbingBackend>(inner, std::move(fn), cfg);
}

}  // namespace llmport
