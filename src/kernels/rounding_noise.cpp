// The rounding-noise perturbations and backend (rounding_noise.hpp): errors drawn from the
// format's definition instead of computed by llmport's quantizer, so a quantizer bug cannot
// raise the bound it is held to.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "kernels/reference/reference_ops.hpp"
#include "kernels/rounding_noise.hpp"
#include "llmport/backend_decorator.hpp"
#include "llmport/error.hpp"
#include "llmport/op.hpp"

namespace llmport {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): a counter-based draw, the same on every platform and
// thread count (std:: distributions are implementation-defined).
uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform on [-1/2, 1/2): the rounding error of one value in units of its step.
float centered_uniform(uint64_t seed, uint64_t i) {
  return static_cast<float>(static_cast<double>(mix(seed ^ mix(i)) >> 11) * 0x1.0p-53 - 0.5);
}

// x[k] += step(block) * U[-1/2, 1/2) per value, step = max|x| over the block / levels.
void perturb_blocks(const float* x, float* out, int64_t k, float levels, uint64_t seed) {
  for (int64_t b = 0; b < k; b += kQuantBlock) {
    float amax = 0.0f;
    for (int t = 0; t < kQuantBlock; ++t) amax = std::max(amax, std::abs(x[b + t]));
    const float step = amax / levels;
    for (int t = 0; t < kQuantBlock; ++t)
      out[b + t] = x[b + t] + step * centered_uniform(seed, static_cast<uint64_t>(b + t));
  }
}

}  // namespace

uint64_t noise_seed(const char* name, uint64_t n, uint64_t draw) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  return mix(h ^ mix(n ^ mix(draw)));
}

void add_weight_rounding_noise(QuantType q, float* row, int64_t k, uint64_t seed) {
  // ggml's steps: q8_0 d = amax / 127; q4_0 d = (value of largest magnitude) / -8.
  perturb_blocks(row, row, k, q == QuantType::Q8_0 ? 127.0f : 8.0f, seed);
}

void q8_activation_rounding_noise(const float* x, int m, int k, float* out, uint64_t seed) {
  perturb_blocks(x, out, static_cast<int64_t>(m) * k, 127.0f, seed);
}

namespace {

class RoundingNoiseBackend final : public ForwardingBackend {
 public:
  RoundingNoiseBackend(std::unique_ptr<Backend> inner, Rounding r) : ForwardingBackend(std::move(inner)), r_(r) {}
  std::string isa() const override { return "rounding-noise/" + rounding_level(r_) + " over " + ForwardingBackend::isa(); }
  bool supports(const OpDesc& op) const override {
    const bool linear = op.kind == OpKind::Gemm || op.kind == OpKind::Gemv || op.kind == OpKind::LinearGroup;
    return (linear && op.quant != QuantType::None) || ForwardingBackend::supports(op);
  }

  std::unique_ptr<LinearWeight> make_quantized_linear(const TensorView& t, QuantType quant,
                                                      const TileConfig& cfg) override {
    if (t.shape.size() != 2) throw ShapeError(t.file.string() + ": " + t.name + ": linear weight must be 2-D");
    const int64_t n_out = t.shape[0], n_in = t.shape[1];
    if (n_in % kQuantBlock != 0)
      throw UsageError(t.name + ": input dimension " + std::to_string(n_in) + " is not a multiple of " +
                       std::to_string(kQuantBlock) + " (" + std::string(quant_name(quant)) + " blocks)");
    std::vector<float> w(static_cast<std::size_t>(t.numel()));
    to_f32(t.dtype, t.data, w.data(), w.size());
    for (int64_t r = 0; r < n_out; ++r) {
      float* row = w.data() + r * n_in;
      if (r_.mode == Rounding::Mode::Noise)
        add_weight_rounding_noise(quant, row, n_in, noise_seed(t.name.c_str(), static_cast<uint64_t>(r), r_.draw));
      if (r_.mode == Rounding::Mode::Quantizer) quantize_round_trip(quant, row, row, n_in);
    }
    TensorView v;
    v.name = t.name;
    v.dtype = DType::F32;
    v.shape = t.shape;
    v.data = w.data();
    v.nbytes = w.size() * sizeof(float);
    v.file = t.file;
    auto lw = inner().make_linear(v, DType::F32);  // packs a copy: `w` may go
    if (r_.mode != Rounding::Mode::Off && !cfg.empty() && act_of(cfg) == ActQuant::Q8) q8_act_.insert(lw.get());
    return lw;
  }

  void linear(const LinearWeight& w, const float* x, int m, float* y, const float* bias, OpTag tag) override {
    inner().linear(w, q8_act_.contains(&w) ? rounded(x, m, w.n_in) : x, m, y, bias, tag);
  }
  void linear_group(std::span<const LinearCall> calls, const float* x, int m, OpTag tag) override {
    bool q8 = false;
    for (const LinearCall& c : calls) q8 = q8 || (c.w && q8_act_.contains(c.w));
    inner().linear_group(calls, q8 && !calls.empty() ? rounded(x, m, calls.front().w->n_in) : x, m, tag);
  }

 private:
  // x[m, k] as its q8 blocks hold it (Quantizer) or with their rounding error drawn anew at
  // each call (Noise), as each call of the engine rounds its own input.
  const float* rounded(const float* x, int m, int k) {
    xq_.resize(static_cast<std::size_t>(m) * static_cast<std::size_t>(k));
    if (r_.mode == Rounding::Mode::Quantizer) reference::q8_activation_round_trip(x, m, k, xq_.data());
    else q8_activation_rounding_noise(x, m, k, xq_.data(), noise_seed("act", calls_++, r_.draw));
    return xq_.data();
  }

  Rounding r_;
  uint64_t calls_ = 0;
  std::set<const LinearWeight*> q8_act_;  // quantized linears whose engine counterpart rounds x to q8
  std::vector<float> xq_;
};

}  // namespace

std::string rounding_level(const Rounding& r) {
  switch (r.mode) {
    case Rounding::Mode::Off: return "off";
    case Rounding::Mode::Quantizer: return "quantizer";
    case Rounding::Mode::Noise: break;
  }
  return std::to_string(r.draw);
}

std::unique_ptr<Backend> make_rounding_noise_backend(std::unique_ptr<Backend> inner, Rounding r) {
  return std::make_unique<RoundingNoiseBackend>(std::move(inner), r);
}

}  // namespace llmport
