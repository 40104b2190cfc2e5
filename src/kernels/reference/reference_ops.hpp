#pragma once
// Scalar fp32 reference ops (the oracle). One .cpp per op; the reference Backend forwards
// to these. Every function is deliberately a plain loop: obviously right, never optimized.
#include <cstddef>

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


/// The same ops with every sum and intermediate in fp64 and each output rounded to fp32
/// once (shapes as above): the oracle's arithmetic made exact at its op boundaries. Not a
/// reference (it is llmport's), the direction an fp32 computation's rounding points away
/// from (verify's copy-direction check).
namespace precise {
void linear(const float* w, int n_out, int n_in, const float* x, int m, float* y, const float* bias,
            int threads = 1);
void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps);
void rope(float* x, int m, int n_heads, int head_dim, const int* positions, const float* inv_freq);
void attention(const float* q, const float* k_cache, const float* v_cache, int max_seq, int start_pos, int m,
               int n_heads, int n_kv_heads, int head_dim, float scale, float* out);
void swiglu(const float* gate, const float* up, float* out, std::size_t n);
}  // namespace precise

}  // namespace llmport::reference
