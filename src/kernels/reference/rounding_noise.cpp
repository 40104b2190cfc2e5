// The rounding-noise oracle's perturbations (reference_ops.hpp): what rounding to a block
// format costs a model, measured with errors drawn from the format's definition instead of
// computed by llmport's quantizer, so a quantizer bug cannot raise the bound it is held to.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/reference/reference_ops.hpp"
#include "llmport/quant.hpp"

namespace llmport::reference {
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

}  // namespace llmport::reference
