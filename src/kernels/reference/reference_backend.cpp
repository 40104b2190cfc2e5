// The reference Backend: scalar fp32 oracle. Weights are rounded once to the compute dtype
// and then widened to fp32, so the oracle sees exactly the values a bf16/fp16 kernel sees.
#include <algorithm>
#include <vector>

#include "kernels/backend_impls.hpp"
#include "kernels/reference/reference_ops.hpp"
#include "llmport/error.hpp"

namespace llmport {
namespace {

class RefLinear final : public LinearWeight {
 public:
  std::vector<float> w;  // [n_out, n_in], values representable in `dtype`
  std::size_t bytes() const override { return w.size() * sizeof(float); }
};

class ReferenceBackend final : public Backend {
 public:
  explicit ReferenceBackend(bool precise) : precise_(precise) {}
  std::string name() const override { return "reference"; }
  std::string isa() const override { return precise_ ? "fp64" : "scalar"; }
  // Threads split a linear's output columns only (reference::linear): every value is the
  // same sequential fp32 sum at any count, so the oracle's outputs do not depend on it.
  void set_threads(int n) override { threads_ = resolve_backend_threads(n); }
  int threads() const override { return threads_; }
  // Every op in every dtype, and q8_0/q4_0 linears (the exactly dequantized weights times
  // fp32 x): the oracle is what other backends are checked against.
  bool supports(const OpDesc& op) const override {
    if (op.quant_block == 0 && op.quant == QuantType::None) return true;
    const bool linear = op.kind == OpKind::Gemm || op.kind == OpKind::Gemv || op.kind == OpKind::LinearGroup;
    return linear && op.quant_block == kQuantBlock && op.quant != QuantType::None;
  }

  std::unique_ptr<LinearWeight> make_linear(const TensorView& t, DType compute,
                                            const TileConfig& cfg) override {
    if (t.shape.size() != 2)
      throw ShapeError(t.file.string() + ": " + t.name + ": linear weight must be 2-D");
    auto lw = std::make_unique<RefLinear>();
    lw->n_out = static_cast<int>(t.shape[0]);
    lw->n_in = static_cast<int>(t.shape[1]);
    lw->dtype = compute;
    lw->config = cfg;
    const std::size_t n = static_cast<std::size_t>(t.numel());
    lw->w.resize(n);
    to_f32(t.dtype, t.data, lw->w.data(), n);
    round_through(compute, lw->w.data(), lw->w.data(), n);
    return lw;
  }

  // The values a q8_0/q4_0 kernel multiplies (quantize, then widen), held as fp32: the oracle
  // of the quantized kernels and the reference for quantization error.
  std::unique_ptr<LinearWeight> make_quantized_linear(const TensorView& t, QuantType quant,
                                                      const TileConfig& cfg) override {
    auto lw = make_linear(t, DType::F32, cfg);
    auto& rw = static_cast<RefLinear&>(*lw);
    if (rw.n_in % kQuantBlock != 0)
      throw UsageError(t.name + ": input dimension " + std::to_string(rw.n_in) + " is not a multiple of " +
                       std::to_string(kQuantBlock) + " (" + std::string(quant_name(quant)) + " blocks)");
    for (int r = 0; r < rw.n_out; ++r) {
      float* row = rw.w.data() + static_cast<std::size_t>(r) * rw.n_in;
      try {
        quantize_round_trip(quant, row, row, rw.n_in);
      } catch (const WeightsError& e) {
        throw WeightsError(t.file.string() + ": " + t.name + ": row " + std::to_string(r) + ": " + e.what());
      }
    }
    rw.quant = quant;
    return lw;
  }

  void linear(const LinearWeight& w, const float* x, int m, float* y, const float* bias,
              OpTag = {}) override {
    counters_.add(m == 1 ? "reference:gemv" : "reference:gemm");
    const auto& rw = dynamic_cast<const RefLinear&>(w);
    if (rw.quant != QuantType::None && act_of(rw.config) == ActQuant::Q8) {
      // The values an int8 dot product multiplies: the oracle of a q8-activation kernel.
      xq_.resize(static_cast<std::size_t>(m) * static_cast<std::size_t>(rw.n_in));
      reference::q8_activation_round_trip(x, m, rw.n_in, xq_.data());
      x = xq_.data();
    }
    if (precise_)
      reference::precise::linear(rw.w.data(), rw.n_out, rw.n_in, x, m, y, bias, threads_);
    else
      reference::linear(rw.w.data(), rw.n_out, rw.n_in, x, m, y, bias, threads_);
  }
  void gather_rows(const LinearWeight& w, const int* rows, int m, float* out, OpTag = {}) override {
    counters_.add("reference:gather_rows");
    const auto& rw = dynamic_cast<const RefLinear&>(w);
    for (int t = 0; t < m; ++t) {
      check_gather_row(w, rows[t]);
      const float* src = rw.w.data() + static_cast<std::size_t>(rows[t]) * rw.n_in;
      std::copy(src, src + rw.n_in, out + static_cast<std::size_t>(t) * rw.n_in);
    }
  }
  void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps,
               OpTag = {}) override {
    counters_.add("reference:rmsnorm");
    if (precise_)
      reference::precise::rmsnorm(x, w, y, m, dim, eps);
    else
      reference::rmsnorm(x, w, y, m, dim, eps);
  }
  void rope(float* x, int m, int n_heads, int head_dim, const int* positions,
            const float* inv_freq, OpTag = {}) override {
    counters_.add("reference:rope");
    if (precise_)
      reference::precise::rope(x, m, n_heads, head_dim, positions, inv_freq);
    else
      reference::rope(x, m, n_heads, head_dim, positions, inv_freq);
  }
  void attention(const AttentionArgs& a, OpTag = {}) override {
    counters_.add(a.m == 1 ? "reference:attention_decode" : "reference:attention_prefill");
    auto* op = precise_ ? &reference::precise::attention : &reference::attention;
    op(a.q, a.k_cache, a.v_cache, a.kv_capacity, a.start_pos, a.m, a.n_heads, a.n_kv_heads, a.head_dim,
       a.scale, a.out);
  }
  void swiglu(const float* gate, const float* up, float* out, std::size_t n, OpTag = {}) override {
    counters_.add("reference:swiglu");
    (precise_ ? &reference::precise::swiglu : &reference::swiglu)(gate, up, out, n);
  }
  void add(float* x, const float* y, std::size_t n, OpTag = {}) override {
    counters_.add("reference:add");
    reference::add(x, y, n);
  }

 private:
  std::vector<float> xq_;  // [m, n_in] q8 activation values of the current linear
  int threads_ = 1;
  bool precise_;
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend(int threads, bool precise) {
  auto be = std::make_unique<ReferenceBackend>(precise);
  be->set_threads(threads);
  return be;
}

}  // namespace llmport
