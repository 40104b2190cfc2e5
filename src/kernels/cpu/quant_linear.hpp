#pragma once
// Block-quantized (q8_0, q4_0) linear weights of the cpu backend, repacked from ggml's
// row-major blocks into interleaved panels of 16 output columns (as ggml's repacked
// q4_0_8x8 and friends), and their kernels.
//
// Layout: panel p (columns 16p..16p+15, zero columns past n) holds its k/32 panel blocks
// one after another; panel block b is
//   fp16 d[16]                           the 16 columns' scales of block b
//   then 16 x 32 quants, 64 bytes per group of four elements: byte 4c + t of group g is
//     q8_0: element 4g + t of column c, stored as q + 128 (u8; g = 0..7)
//     q4_0: ggml byte 4g + t of column c (g = 0..3): element 4g + t in the low nibble,
//           element 16 + 4g + t in the high nibble (u8 nibble, value nibble - 8).
// So one 64-byte load is the 16 columns x 4 elements operand of a vpdpbusd (u8 weights
// times s8 activations), and a column is a vector lane in every kernel.
//
// Numerics, identical on every level (scalar included) and for every m and tile shape (a
// column is one lane; each row has its own accumulators):
//  - act 1 (q8 x blocks): per block the exact integer dot product isum, then
//    acc = fma(float(isum), d_w * d_x, acc) over blocks in order; y = acc (+ bias).
//  - act 0 (fp32 x): w = (q - offset) * d (exact in fp32), acc = fma(x_e, w_e, acc) over
//    the k elements in order; y = acc (+ bias).
// So a row's result does not depend on its batch (batch invariance, which the server's
// continuous batching relies on) nor on the ISA level (tests/kernels/cpu_quant_op_test.cpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/page_buffer.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "llmport/kernels.hpp"

namespace llmport::cpu {

/// Output columns per panel of a CpuQuantLinear.
inline constexpr int kQuantPanel = 16;

class CpuQuantLinear final : public LinearWeight {
 public:
  /// W [n, k] in format `q` (k a multiple of kQuantBlock), zero-filled; `cfg` its tile
  /// config (only "act" matters; UsageError for another key or value).
  CpuQuantLinear(int n, int k, QuantType q, const TileConfig& cfg = {});
  /// Bytes of the panels of an [n, k] weight in format `q` (n rounded up to 16 columns).
  static std::size_t packed_bytes(int n, int k, QuantType q) noexcept;
  std::size_t bytes() const override { return data_.size(); }
  std::span<const std::byte> packed() const override { return {data_.data(), data_.size()}; }
  std::byte* data() { return data_.data(); }
  int n_panels() const { return (n_out + kQuantPanel - 1) / kQuantPanel; }
  int n_blocks() const { return n_in / kQuantBlock; }
  /// Bytes of one panel block: 16 fp16 scales + 16 columns' quants (544 or 288).
  std::size_t panel_block_bytes() const { return panel_block_bytes_; }
  /// Panel block b of panel p (layout above).
  const std::byte* panel_block(int p, int b) const {
    return data_.data() + (static_cast<std::size_t>(p) * n_blocks() + b) * panel_block_bytes_;
  }
  /// Stores output row j from its k/32 ggml blocks (BlockQ8_0 or BlockQ4_0, the format's).
  void set_row(int j, const void* blocks);
  /// Output row j as its k/32 ggml blocks (the inverse of set_row).
  void get_row(int j, void* blocks) const;
  /// The activation format its kernel multiplies (from config "act").
  ActQuant act() const { return act_; }
  /// Another tile config (the blocks do not depend on it). UsageError for a bad one.
  void set_config(const TileConfig& cfg);

 private:
  std::byte* panel_block_mut(int p, int b) {
    return data_.data() + (static_cast<std::size_t>(p) * n_blocks() + b) * panel_block_bytes_;
  }
  std::size_t panel_block_bytes_ = 0;
  ActQuant act_ = ActQuant::F32;
  PageBuffer data_;  // [n_panels][k / 32][panel block]; huge pages from 2 MiB (page_buffer.hpp)
};

/// The panel block of one format: scales, then quants (the layout above).
inline constexpr std::size_t kPanelScaleBytes = 2 * kQuantPanel;
inline constexpr std::size_t panel_quant_bytes(QuantType q) noexcept {
  return q == QuantType::Q8_0 ? kQuantPanel * kQuantBlock : kQuantPanel * kQuantBlock / 2;
}

/// The tile keys of a quantized linear: "act" 0 (fp32 x) or 1 (q8 x). Throws UsageError
/// naming any other key or value.
void check_quant_tiles(const TileConfig& cfg);

/// x [m, k] as q8 activation blocks: q [m][k] int8 (-127..127), d [m][k/32] fp32 scales
/// and s [m][k/32] the sum of each block's 32 quants (the offset correction of u8 weights:
/// sum((w + o) * x) - o * sum(x) = sum(w * x)).
struct ActQ8 {
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const int32_t* s = nullptr;
};

/// Rows [r0, r1) of x [m][k] (k a multiple of 32) to q8 blocks: per block d = max|x| / 127
/// (fp32), id = d ? 1/d : 0, q = round-half-even(x * id) (x / d where 1/d overflows, d below
/// ~2.9e-39), s = sum(q). A block holding a NaN or Inf gets d = NaN and zero quants, so the
/// outputs that read it are NaN (as in fp32), never a silent zero. Generic code, the same on
/// every level, so every level and every m sees the same q, d and s.
void quantize_act_rows(const float* x, int r0, int r1, int k, int8_t* q, float* d, int32_t* s);

/// y[i, j] = x[i, :] . W[j, :] (+ bias[j]) for rows i in [0, m) and outputs j in [j0, j1),
/// j0 a multiple of kQuantPanel (a chunk is whole panels). x: [m, k] fp32; y: [m, n] fp32.
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
/// (every AVX512_BF16 CPU so far), avx512 the maddubs form on zmm, avx2 on ymm.
QuantLinearQ8Fn quant_linear_q8_kernel(Isa isa) noexcept;
/// "vnni", "maddubs" or "scalar": the q8 dot product quant_linear_q8_kernel(isa) uses.
const char* quant_q8_dot_name(Isa isa) noexcept;

/// Quantizes `w` [n, k] (any stored dtype; rows widened to fp32 first, exact) to `q`, rows
/// split over `threads` OpenMP threads (0: all cores). Throws UsageError when k is not a
/// multiple of kQuantBlock or `cfg` is not a quantized tile config, ShapeError when not 2-D.
std::unique_ptr<CpuQuantLinear> quantize_linear(const TensorView& w, QuantType q, const TileConfig& cfg = {},
                                                int threads = 1);

}  // namespace llmport::cpu
