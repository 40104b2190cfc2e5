#pragma once
// This machine's roofline (measured, not assumed) and a model's bounds on it, for
// `llmport bench` (issue 6: tg >= 90% of the memory-read roofline, pp >= 60% of bf16 peak).
#include <cstddef>
#include <string>

#include "llmport/dtype.hpp"
#include "llmport/model_config.hpp"

namespace llmport {

/// Measured limits of this machine.
struct Roofline {
  int threads = 1;
  double read_gbps_1t = 0;  ///< streaming read, 1 thread (GB/s = 1e9 bytes/s)
  double read_gbps = 0;     ///< streaming read, `threads` threads
  double bf16_gflops = 0;   ///< vdpbf16ps peak with `threads` threads (0 without AVX512_BF16)
  double f32_gflops = 0;    ///< fp32 FMA peak with `threads` threads
  std::string isa;          ///< widest vector ISA used
};

/// Measures the roofline (~1-2 s): a 512 MiB read buffer, 0.2 s compute loops per thread.
Roofline measure_roofline(int threads);

/// Per-token costs of one model: bytes streamed per decode token and FLOPs per token.
struct ModelCost {
  double weight_bytes = 0;      ///< linear weights in the compute dtype (read once per decode step)
  double flops_per_token = 0;   ///< 2 x linear parameters (attention excluded)
  double kv_bytes_per_pos = 0;  ///< fp32 K+V bytes per cached position (all layers)
};
ModelCost model_cost(const ModelConfig& cfg, DType dtype);

/// Decode bound (tokens/s) at context `ctx`: read_gbps / (weight + KV bytes).
double decode_bound_tps(const Roofline& r, const ModelCost& c, int ctx);
/// Prefill bound (tokens/s): peak of the dtype (bf16 peak for bf16, fp32 FMA otherwise)
/// / FLOPs per token.
double prefill_bound_tps(const Roofline& r, const ModelCost& c, DType dtype);

}  // namespace llmport
