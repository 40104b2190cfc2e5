#pragma once
// Scalar fp32 reference ops (the oracle). One .cpp per op; the reference Backend forwards
// to these. Every function is deliberately a plain loop: obviously right, never optimized.
#include <cstddef>
#include <cstdint>

#include "llmport/quant.hpp"

namespace llmport::reference {

/// y[m, n_out] = x[m, n_in] . W^T (+ bias[n_out]); W: [n_out, n_in] fp32. fp64 accumulation
/// is not used on purpose: the oracle matches an fp32 engine (HF float32 matmul). Output
/// columns are split over `threads` OpenMP threads when the product is large; each output
/// is still one thread's sequential sum, so the result does not depend on `threads`.
void linear(const float* w, int n_out, int n_in, const float* x, int m, float* y,
            const float* bias, int threads = 1);
/// x[m, k] as the q8 activation blocks of ActQuant::Q8 (llmport/op.hpp) hold it, widened
/// back to fp32 into out[m, k]: per 32 values d = max|x| / 127 in fp32, q = round half to
/// even of x * (1 / d) (x / d where 1 / d overflows), value q * d; a block holding a NaN or Inf is all NaN (as the fp32 path
/// would make every output that reads it). k a multiple of 32.
void q8_activation_round_trip(const float* x, int m, int k, float* out);
/// The rounding-noise oracle (reference level "rounding-noise"): what rounding to a block
/// format costs a model, from the format's definition rather than llmport's quantizer.
/// Rounding a value to a grid of step d errs by U[-d/2, d/2) (the uniform quantization-noise
/// model, Widrow and Kollar, "Quantization Noise", 2008, ch. 4), so each value gets an
/// independent draw of that error, d from its 32-value block as ggml-quants.c defines it:
/// q8_0 d = max|x| / 127, q4_0 d = max|x| / 8 (what q4_0's clipping of +8d to +7d adds is
/// not modelled). Deterministic: the draws depend on `seed` and the value's index only.
/// A seed for the draws of tensor `name`, its part `n` (row or call), in draw `draw` (each
/// draw is another independent realization of the whole noise).
uint64_t noise_seed(const char* name, uint64_t n, uint64_t draw = 0);
/// row[k] (k a multiple of 32) plus the rounding error of format `q` (Q8_0 or Q4_0).
void add_weight_rounding_noise(QuantType q, float* row, int64_t k, uint64_t seed);
/// x[m, k] plus the rounding error of q8 activation blocks, into out[m, k] (may alias x).
void q8_activation_rounding_noise(const float* x, int m, int k, float* out, uint64_t seed);
/// HF LlamaRMSNorm: y = x / sqrt(mean(x^2) + eps) * w, x/y: [m, dim] (y may alias x).
void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps);
/// Rotate-half RoPE (HF apply_rotary_pos_emb), x: [m, n_heads, head_dim] in place.
void rope(float* x, int m, int n_heads, int head_dim, const int* positions, const float* inv_freq);
/// Causal GQA attention against a KV cache [n_kv_heads, max_seq, head_dim].
void attention(const float* q, const float* k_cache, const float* v_cache, int max_seq,
               int start_pos, int m, int n_heads, int n_kv_heads, int head_dim, float scale,
               float* out);
/// out = silu(gate) * up.
void swiglu(const float* gate, const float* up, float* out, std::size_t n);
/// x += y.
void add(float* x, const float* y, std::size_t n);
/// Max-subtracted softmax in place.
void softmax(float* x, std::size_t n);

}  // namespace llmport::reference
