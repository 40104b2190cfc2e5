#pragma once
// Block-quantized (q8_0, q4_0) linear weights of the cpu backend: each output row's k/32
// ggml blocks stored contiguously (llmport/quant.hpp formats), multiplied with fp32 x by
// widening the weights in registers (w = q * d is exact in fp32, so a kernel computes the
// fp32 dot product of the dequantized weights: the fp32 GEMV/GEMM tolerance applies).
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "llmport/kernels.hpp"

namespace llmport::cpu {

class CpuQuantLinear final : public LinearWeight {
 public:
  /// W [n, k] in format `q` (k a multiple of kQuantBlock), zero-filled.
  CpuQuantLinear(int n, int k, QuantType q);
  std::size_t bytes() const override { return data_.size(); }
  std::span<const std::byte> packed() const override { return data_; }
  /// Bytes of one output row's blocks.
  std::size_t row_bytes() const { return row_bytes_; }
  const std::byte* row(int j) const { return data_.data() + static_cast<std::size_t>(j) * row_bytes_; }
  std::byte* row(int j) { return data_.data() + static_cast<std::size_t>(j) * row_bytes_; }

 private:
  std::size_t row_bytes_ = 0;
  std::vector<std::byte> data_;  // [n][k / 32 blocks]
};

/// y[i, j] = x[i, :] . W[j, :] (+ bias[j]) for rows i in [0, m) and outputs j in [j0, j1).
/// x: [m, k] fp32; y: [m, n] fp32.
using QuantLinearFn = void (*)(const CpuQuantLinear& w, const float* x, int m, float* y,
                               const float* bias, int j0, int j1);

namespace scalar {
void quant_linear(const CpuQuantLinear&, const float*, int, float*, const float*, int, int);
}
namespace avx2 {
void quant_linear(const CpuQuantLinear&, const float*, int, float*, const float*, int, int);
}
namespace avx512 {
void quant_linear(const CpuQuantLinear&, const float*, int, float*, const float*, int, int);
}
/// The kernel of level `isa` (avx512bf16 uses the avx512 one: no bf16 math here).
QuantLinearFn quant_linear_kernel(Isa isa) noexcept;

/// Quantizes `w` [n, k] (any stored dtype; rows widened to fp32 first, exact) to `q`.
/// Throws UsageError when k is not a multiple of kQuantBlock, ShapeError when not 2-D.
std::unique_ptr<CpuQuantLinear> quantize_linear(const TensorView& w, QuantType q);

}  // namespace llmport::cpu
