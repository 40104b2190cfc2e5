#pragma once
// The rounding-noise backend: what rounding to a block format costs a model, from the
// format's definition rather than llmport's quantizer (verify's predicted cost,
// src/verify/quant_cost.cpp). Rounding a value to a grid of step d errs by U[-d/2, d/2)
// (the uniform quantization-noise model, Widrow and Kollar, "Quantization Noise", 2008,
// ch. 4), so each value gets an independent draw of that error, d from its 32-value block
// as ggml-quants.c defines it: q8_0 d = max|x| / 127, q4_0 d = max|x| / 8 (what q4_0's
// clipping of +8d to +7d adds is not modelled). Deterministic: the draws depend on the
// seed and the value's index only.
#include <cstdint>
#include <memory>
#include <string>

#include "llmport/kernels.hpp"
#include "llmport/quant.hpp"

namespace llmport {

/// A seed for the draws of tensor `name`, its part `n` (row or call), in realization
/// `draw` of the whole noise.
uint64_t noise_seed(const char* name, uint64_t n, uint64_t draw = 0);
/// row[k] (k a multiple of 32) plus the rounding error of format `q` (Q8_0 or Q4_0).
void add_weight_rounding_noise(QuantType q, float* row, int64_t k, uint64_t seed);
/// x[m, k] (k a multiple of 32) plus the rounding error of q8 activation blocks, into
/// out[m, k] (may alias x).
void q8_activation_rounding_noise(const float* x, int m, int k, float* out, uint64_t seed);

/// What the backend does to a quantized linear's values.
struct Rounding {
  enum class Mode {
    Off,        ///< nothing: the plain side a prediction compares with
    Quantizer,  ///< llmport's quantizer (quantize_round_trip, q8 activation blocks)
    Noise,      ///< independent errors of the format's step, realization `draw`
  };
  Mode mode = Mode::Off;
  uint64_t draw = 0;
};
/// The level name of `r`: "off", "quantizer" or the draw's number.
std::string rounding_level(const Rounding& r);

/// Wraps `inner` (a float backend): each quantized linear (make_quantized_linear) becomes
/// an fp32 linear of `inner` holding the weights as `r` leaves them, and one whose config's
/// act key is Q8 rounds its input the same way at every call; everything else is
/// `inner`'s. Off builds the same fp32 linears untouched: an engine's float projections
/// would also round their input to the base dtype, which the other modes do not.
/// make_quantized_linear throws UsageError when the input dimension is not a multiple of
/// 32, WeightsError as quantize_round_trip (Quantizer).
std::unique_ptr<Backend> make_rounding_noise_backend(std::unique_ptr<Backend> inner, Rounding r);

}  // namespace llmport
