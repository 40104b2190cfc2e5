#pragma once
// This machine's roofline (measured, not assumed) and a model's bounds on it, for
// `llmport bench` (issue 6: tg >= 90% of the memory-read roofline, pp >= 60% of bf16 peak).
// The prefill bound uses the best compute peak any kernel path can use for the weight
// dtype (compute_peak), so a fraction never looks good only because a slow path was timed.
#include <cstddef>
#include <string>

#include "llmport/dtype.hpp"
#include "llmport/model_config.hpp"
#include "llmport/quant.hpp"

namespace llmport {

/// Measured limits of this machine.
struct Roofline {
  int threads = 1;
  double read_gbps_1t = 0;  ///< streaming read, 1 thread (GB/s = 1e9 bytes/s)
  double read_gbps = 0;     ///< streaming read, `threads` threads
  double bf16_gflops = 0;   ///< vdpbf16ps peak with `threads` threads (0 without AVX512_BF16)
  double f32_gflops = 0;    ///< fp32 FMA peak with `threads` threads
  double int8_gops = 0;     ///< int8 dot peak (u8 x s8 into int32, 2 ops per multiply-add:
                            ///< vpdpbusd with AVX512_VNNI, else vpmaddubsw + vpmaddwd)
  std::string isa;          ///< widest vector ISA used
};

/// Measures the roofline (~1-2 s): a 512 MiB read buffer, 0.2 s compute loops per thread.
/// The loops are the cpu backend's (implemented in src/kernels/cpu/roofline.cpp); all zero
/// but `threads` and `isa` on a machine without AVX2.
Roofline measure_roofline(int threads);
/// Only the compute peaks of `threads` threads (read fields 0): fp32 FMA, vdpbf16ps when
/// `bf16` and this CPU has AVX512_BF16, the int8 dot when `int8`. All zero without AVX2.
Roofline measure_compute_peaks(int threads, bool bf16, bool int8 = false);

/// Per-token costs of one model: bytes streamed per decode token and FLOPs.
struct ModelCost {
  double weight_bytes = 0;      ///< linear weights in the compute dtype (read once per decode step)
  double flops_per_token = 0;   ///< 2 x linear parameters, lm_head included (one decode step)
  double layer_flops_per_token = 0;  ///< 2 x decoder-layer linear parameters (lm_head excluded)
  double lm_head_flops = 0;          ///< 2 x vocab_size x emb_dim (one row of logits)
  double attn_flops_per_pair = 0;    ///< 4 x n_heads x head_dim x n_layers: q.k and p.v of one
                                     ///< (query, key) pair over all layers
  double kv_bytes_per_pos = 0;  ///< fp32 K+V bytes per cached position (all layers)
};
ModelCost model_cost(const ModelConfig& cfg, DType dtype);

/// FLOPs of a prefill of n tokens from an empty cache, as the engine does it: every token
/// through the decoder layers, causal attention over n (n + 1) / 2 (query, key) pairs, and
/// the lm_head for the last token only (llama-bench's pp test does the same).
double prefill_flops(const ModelCost& c, int n);

/// Decode bound (tokens/s) at context `ctx`: read_gbps / (weight + KV bytes).
double decode_bound_tps(const Roofline& r, const ModelCost& c, int ctx);

/// The compute peak a prefill GEMM on weights of one dtype can reach on this machine.
struct ComputePeak {
  double gflops = 0;  ///< GFLOP/s (int8: G multiply-adds x 2 per s) with `threads` threads
  std::string kind;   ///< "bf16_dot" (vdpbf16ps peak), "fp32_fma" (fp32 FMA peak) or
                      ///< "int8_dot" (the int8 dot peak)
};
/// Best peak any CPU kernel path can use for `dtype` weights: bf16 weights run either
/// with vdpbf16ps or widened to fp32 in registers and multiplied with FMAs (tile config
/// "fma": 1), so their peak is max(bf16_gflops, f32_gflops) (on Intel the FMA peak is the
/// larger, on AMD Zen 4/5 the vdpbf16ps one); fp16 and fp32 weights use FMAs: f32_gflops.
/// Block-quantized weights (`quant` q8_0/q4_0) run with int8 activation blocks or widened
/// to fp32 (tile config "act"), so theirs is max(int8_gops, f32_gflops). Ties go to the
/// dot product. {0, "fp32_fma"} for a roofline that was not measured.
ComputePeak compute_peak(const Roofline& r, DType dtype, QuantType quant = QuantType::None);
/// Measures only the compute peak for `dtype` (`quant`) weights (~0.2-0.4 s; what
/// compute_peak of a full measure_roofline would give): `llmport bench` re-measures it
/// next to each prefill repetition.
ComputePeak measure_compute_peak(int threads, DType dtype, QuantType quant = QuantType::None);
/// Prefill bound (tokens/s) of an n-token prompt: compute_peak(r, dtype, quant).gflops x n
/// / prefill_flops(c, n). 0 when n < 1 or nothing was measured.
double prefill_bound_tps(const Roofline& r, const ModelCost& c, DType dtype, int n,
                         QuantType quant = QuantType::None);

}  // namespace llmport
