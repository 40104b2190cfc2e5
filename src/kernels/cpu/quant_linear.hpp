#pragma once
// Block-quantized (q8_0, q4_0) linear weights of the cpu backend: each output row's k/32
// ggml blocks stored contiguously (llmport/quant.hpp formats). Two kernels per level, chosen
// by the weight's tile config "act" (ActQuant, llmport/op.hpp), never by m:
//  - act 0: fp32 x times the weights widened in registers (w = q * d is exact in fp32, so a
//    kernel computes the fp32 dot product of the dequantized weights);
//  - act 1: x quantized per 32-block to int8 (quantize_act_rows), integer block dot
//    products (AVX-512 VNNI vpdpbusd, AVX2 maddubs, scalar), one fp32 multiply-add by
//    d_w * d_x per block.
// Every row of x is computed by the same instruction sequence whatever m is (per-row
// accumulators, the same block order), so a row's result does not depend on its batch.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "llmport/kernels.hpp"

namespace llmport::cpu {

class CpuQuantLinear final : public LinearWeight {
 public:
  /// W [n, k] in format `q` (k a multiple of kQuantBlock), zero-filled; `cfg` its tile
  /// config (only "act" matters; UsageError for another key or value).
  CpuQuantLinear(int n, int k, QuantType q, const TileConfig& cfg = {});
  std::size_t bytes() const override { return data_.size(); }
  std::span<const std::byte> packed() const override { return data_; }
  /// Bytes of one output row's blocks.
  std::size_t row_bytes() const { return row_bytes_; }
  const std::byte* row(int j) const { return data_.data() + static_cast<std::size_t>(j) * row_bytes_; }
  std::byte* row(int j) { return data_.data() + static_cast<std::size_t>(j) * row_bytes_; }
  std::byte* data() { return data_.data(); }
  /// The activation format its kernel multiplies (from config "act").
  ActQuant act() const { return act_; }
  /// Another tile config (the blocks do not depend on it). UsageError for a bad one.
  void set_config(const TileConfig& cfg);

 private:
  std::size_t row_bytes_ = 0;
  ActQuant act_ = ActQuant::F32;
  std::vector<std::byte> data_;  // [n][k / 32 blocks]
};

/// The tile keys of a quantized linear: "act" 0 (fp32 x) or 1 (q8 x). Throws UsageError
/// naming any other key or value.
void check_quant_tiles(const TileConfig& cfg);

/// x [m, k] as q8 activation blocks: q [m][k] int8 and d [m][k/32] fp32 scales.
struct ActQ8 {
  const int8_t* q = nullptr;
  const float* d = nullptr;
};

/// Rows [r0, r1) of x [m][k] (k a multiple of 32) to q8 blocks: per block d = max|x| / 127
/// (fp32), id = d ? 1/d : 0, q = round-half-even(x * id). Generic code, the same on every
/// level, so every level and every m sees the same q and d.
void quantize_act_rows(const float* x, int r0, int r1, int k, int8_t* q, float* d);

/// y[i, j] = x[i, :] . W[j, :] (+ bias[j]) for rows i in [0, m) and outputs j in [j0, j1).
/// x: [m, k] fp32; y: [m, n] fp32.
using QuantLinearFn = void (*)(const CpuQuantLinear& w, const float* x, int m, float* y,
                               const float* bias, int j0, int j1);
/// Same with x as q8 blocks (quantize_act_rows).
using QuantLinearQ8Fn = void (*)(const CpuQuantLinear& w, const ActQ8& x, int m, float* y,
                                 const float* bias, int j0, int j1);

#define LLMPORT_DECLARE_QUANT_KERNELS(ns)                                                 \
  namespace ns {                                                                          \
  void quant_linear(const CpuQuantLinear&, const float*, int, float*, const float*, int, int); \
  void quant_linear_q8(const CpuQuantLinear&, const ActQ8&, int, float*, const float*, int, int); \
  }
LLMPORT_DECLARE_QUANT_KERNELS(scalar)
LLMPORT_DECLARE_QUANT_KERNELS(avx2)
LLMPORT_DECLARE_QUANT_KERNELS(avx512)
#undef LLMPORT_DECLARE_QUANT_KERNELS
namespace avx512vnni {
void quant_linear_q8(const CpuQuantLinear&, const ActQ8&, int, float*, const float*, int, int);
}

/// The fp32-x kernel of level `isa` (avx512bf16 uses the avx512 one: no bf16 math here).
QuantLinearFn quant_linear_kernel(Isa isa) noexcept;
/// The q8-x kernel of level `isa`: avx512bf16 uses vpdpbusd where the CPU has AVX512_VNNI
/// (every AVX512_BF16 CPU so far), avx512 and avx2 the maddubs form on ymm.
QuantLinearQ8Fn quant_linear_q8_kernel(Isa isa) noexcept;
/// "vnni", "maddubs" or "scalar": the q8 dot product quant_linear_q8_kernel(isa) uses.
const char* quant_q8_dot_name(Isa isa) noexcept;

/// Quantizes `w` [n, k] (any stored dtype; rows widened to fp32 first, exact) to `q`, rows
/// split over `threads` OpenMP threads (0: all cores). Throws UsageError when k is not a
/// multiple of kQuantBlock or `cfg` is not a quantized tile config, ShapeError when not 2-D.
std::unique_ptr<CpuQuantLinear> quantize_linear(const TensorView& w, QuantType q, const TileConfig& cfg = {},
                                                int threads = 1);

}  // namespace llmport::cpu
