// The faulting backend: each FaultInjection kind as a change to the tagged calls of one layer
// (or of every decode step / the lm_head), what the verify gates must catch.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "llmport/error.hpp"
#include "runtime/decorators.hpp"

namespace llmport {
namespace {

using K = FaultInjection::Kind;

// RoPE on (2i, 2i+1) pairs (GPT-J / llama2.c layout) instead of rotate-half.
// x: [m, n_heads, head_dim].
void rope_interleaved(float* x, int m, int n_heads, int head_dim, const int* positions,
                      const float* inv_freq) {
  for (int t = 0; t < m; ++t)
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (static_cast<std::size_t>(t) * n_heads + h) * head_dim;
      for (int i = 0; i < head_dim / 2; ++i) {
        const float angle = static_cast<float>(positions[t]) * inv_freq[i];
        const float c = std::cos(angle), s = std::sin(angle);
        const float a = v[2 * i], b = v[2 * i + 1];
        v[2 * i] = a * c - b * s;
        v[2 * i + 1] = b * c + a * s;
      }
    }
}

class FaultBackend final : public ForwardingBackend {
 public:
  FaultBackend(Backend& inner, const FaultInjection& f, const ModelConfig& cfg)
      : ForwardingBackend(inner), f_(f) {
    const bool layer_fault = f.kind == K::RopeInterleaved || f.kind == K::DropQkvBias ||
                             f.kind == K::SkipQkNorm || f.kind == K::WrongRopeTheta ||
                             f.kind == K::ProjScale;
    if (layer_fault && (f.layer < 0 || f.layer >= cfg.n_layers))
      throw UsageError("fault layer " + std::to_string(f.layer) + " is outside 0.." +
                       std::to_string(cfg.n_layers - 1));
    if (!layer_fault && f.spec.find('@') != std::string::npos)
      throw UsageError("fault '" + f.spec + "': this kind applies to every layer; it takes no @layer");
    // A fault in a part the model does not have would change nothing: a gate "catching" it
    // would prove nothing, so it is refused.
    if (f.kind == K::DropQkvBias && !cfg.qkv_bias)
      throw UsageError("fault '" + f.spec + "': the model has no q/k/v bias to drop");
    if (f.kind == K::SkipQkNorm && !cfg.qk_norm)
      throw UsageError("fault '" + f.spec + "': the model has no q/k norm to skip");
    if (f.kind == K::WrongRopeTheta) {
      ModelConfig wrong = cfg;
      wrong.rope_theta *= f.value > 0 ? f.value : 2.0;
      wrong_inv_freq_ = rope_inv_freq(wrong);
    }
  }

  void linear(const LinearWeight& w, const float* x, int m, float* y, const float* bias,
              OpTag tag) override {
    inner().linear(w, x, m, y, bias, tag);
    if (f_.kind == K::ProjScale && here(tag) && tag.role == OpRole::O) return scale_projection(w, m, y, bias);
    if (f_.kind != K::LogitScale || tag.role != OpRole::LmHead) return;
    const float sc = static_cast<float>(f_.value > 0 ? f_.value : 1.25);
    std::for_each(y, y + static_cast<std::size_t>(m) * w.n_out, [sc](float& l) { l *= sc; });
  }
  // y = v (W x) + b: the product scaled, the bias (not part of the quantized weight) not.
  void scale_projection(const LinearWeight& w, int m, float* y, const float* bias) const {
    const float v = static_cast<float>(f_.value > 0 ? f_.value : 2.0);
    for (int t = 0; t < m; ++t)
      for (int i = 0; i < w.n_out; ++i) {
        float& e = y[static_cast<std::size_t>(t) * w.n_out + i];
        const float b = bias ? bias[i] : 0.0f;
        e = v * (e - b) + b;
      }
  }
  void linear_group(std::span<const LinearCall> calls, const float* x, int m, OpTag tag) override {
    if (!(f_.kind == K::DropQkvBias && here(tag) && tag.role == OpRole::Qkv))
      return inner().linear_group(calls, x, m, tag);
    std::vector<LinearCall> unbiased(calls.begin(), calls.end());
    for (LinearCall& c : unbiased) c.bias = nullptr;
    inner().linear_group(unbiased, x, m, tag);
  }
  void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps,
               OpTag tag) override {
    const bool qk = tag.role == OpRole::Q || tag.role == OpRole::K;
    if (f_.kind == K::SkipQkNorm && here(tag) && qk) return;  // the q/k norm runs in place
    inner().rmsnorm(x, w, y, m, dim, eps, tag);
  }
  void rope(float* x, int m, int n_heads, int head_dim, const int* positions,
            const float* inv_freq, OpTag tag) override {
    if (f_.kind == K::WrongRopeTheta && here(tag)) inv_freq = wrong_inv_freq_.data();
    if (f_.kind == K::RopeInterleaved && here(tag))
      return rope_interleaved(x, m, n_heads, head_dim, positions, inv_freq);
    inner().rope(x, m, n_heads, head_dim, positions, inv_freq, tag);
  }
  // Decode steps store K/V one position late (the engine keeps one spare position), so the
  // step reads a position nothing wrote. A new sequence first clears what an earlier one
  // left beyond its prompt, so the stale value read is always 0 (deterministic).
  void kv_store(const KvStoreArgs& a, OpTag tag) override {
    if (f_.kind != K::KvOffByOne) return inner().kv_store(a, tag);
    KvStoreArgs late = a;
    if (a.m == 1 && a.pos > 0) late.pos = a.pos + 1;
    if (a.pos == 0) clear_after(a, a.m);
    inner().kv_store(late, tag);
  }

 private:
  bool here(OpTag tag) const { return tag.layer == f_.layer; }
  static void clear_after(const KvStoreArgs& a, int from) {
    for (int h = 0; h < a.n_kv_heads; ++h) {
      const std::size_t row = static_cast<std::size_t>(h) * a.kv_capacity;
      const std::size_t hd = static_cast<std::size_t>(a.head_dim);
      std::fill(a.k_cache + (row + from) * hd, a.k_cache + (row + a.kv_capacity) * hd, 0.0f);
      std::fill(a.v_cache + (row + from) * hd, a.v_cache + (row + a.kv_capacity) * hd, 0.0f);
    }
  }

  FaultInjection f_;
  std::vector<float> wrong_inv_freq_;  // [head_dim / 2] (WrongRopeTheta)
};

}  // namespace

std::unique_ptr<Backend> make_fault_backend(Backend& inner, const FaultInjection& f,
                                            const ModelConfig& cfg) {
  return std::make_unique<FaultBackend>(inner, f, cfg);
}

}  // namespace llmport
