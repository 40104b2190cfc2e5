#pragma once
// Which of llmport's own computations verify's self-match teacher-forces along a golden
// (docs/verification.md "Independence"): every cpu level this machine runs in fp32, bf16
// and fp16, each distinct computation once.
#include <string>
#include <vector>

#include "llmport/dtype.hpp"
#include "llmport/kernels.hpp"
#include "llmport/runner.hpp"
#include "llmport/weights.hpp"

namespace llmport::verify_detail {

/// One computation: the cpu backend at ISA level `level` ("avx2", ...) with `dtype`
/// linears on their default tile configs. `name` is what reports call it, e.g.
/// "cpu fp16 engine (avx2)" (the best level this machine runs is unnamed: "cpu fp16 engine").
struct SelfMatchSide {
  std::string name;
  std::string level;
  DType dtype = DType::F32;
  /// The engine under test computes exactly this (on the cpu backend with its default
  /// configs): its own teacher-forced decode run already counts for the decode path.
  bool is_engine = false;
  /// lm_head's default config takes the bf16 fp32-FMA GEMM at m > 1, which sums unlike the
  /// m = 1 GEMV: a prefill's last row then differs from the same row of a longer prefill.
  bool lm_head_fma = false;
  /// Its side_key: what it computes (empty when the backend has none).
  std::string numerics;
};

/// What a side computes: Backend::numerics_key(dtype) and the default tile config of each
/// linear of the model in `weights` (q/k/v/o, gate/up/down of layer 0, lm_head). Equal
/// non-empty keys at the same thread count compute bit-identical logits; "" when the
/// backend has no numerics key (never merged).
std::string side_key(const Backend& be, DType dtype, const WeightStore& weights);

/// Whether the cpu backend at ISA level `level` gives a `dtype` lm_head of `weights` the
/// bf16 fp32-FMA GEMM by default (SelfMatchSide::lm_head_fma): a quantized engine whose
/// lm_head stays in its base dtype asks this of its level. Throws what make_backend_at throws.
bool lm_head_takes_fma(const std::string& level, DType dtype, const WeightStore& weights, int threads);

/// The sides to run, in report order: every level of backend_levels("cpu") x fp32, bf16,
/// fp16, each distinct side_key once; the one the engine under test computes (`engine` on
/// the cpu backend with `engine_default_configs`, i.e. no registry entry used) is marked
/// is_engine. Throws what make_backend_at throws.
std::vector<SelfMatchSide> self_match_sides(const RunnerInfo& engine, bool engine_default_configs, int threads,
                                            const WeightStore& weights);

}  // namespace llmport::verify_detail
