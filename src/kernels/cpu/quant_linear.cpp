// CpuQuantLinear storage, quantization from the checkpoint, and the per-level kernel choice.
#include "kernels/cpu/quant_linear.hpp"

#include <string>

#include "llmport/error.hpp"

namespace llmport::cpu {

CpuQuantLinear::CpuQuantLinear(int n, int k, QuantType q) {
  n_out = n;
  n_in = k;
  dtype = DType::F32;  // activations stay fp32
  quant = q;
  row_bytes_ = quant_row_bytes(q, k);
  data_.assign(row_bytes_ * static_cast<std::size_t>(n), std::byte{0});
}

QuantLinearFn quant_linear_kernel(Isa isa) noexcept {
  switch (isa) {
    case Isa::Avx512Bf16:
    case Isa::Avx512: return avx512::quant_linear;
    case Isa::Avx2: return avx2::quant_linear;
    case Isa::Scalar: return scalar::quant_linear;
  }
  return scalar::quant_linear;
}

std::unique_ptr<CpuQuantLinear> quantize_linear(const TensorView& w, QuantType q) {
  if (w.shape.size() != 2)
    throw ShapeError(w.file.string() + ": " + w.name + ": linear weight must be 2-D");
  const int n = static_cast<int>(w.shape[0]), k = static_cast<int>(w.shape[1]);
  if (k % kQuantBlock != 0)
    throw UsageError(w.name + ": input dimension " + std::to_string(k) + " is not a multiple of " +
                     std::to_string(kQuantBlock) + " (" + std::string(quant_name(q)) + " blocks)");
  auto lw = std::make_unique<CpuQuantLinear>(n, k, q);
  std::vector<float> row(static_cast<std::size_t>(k));
  const std::size_t in_row = static_cast<std::size_t>(k) * dtype_size(w.dtype);
  for (int j = 0; j < n; ++j) {
    to_f32(w.dtype, static_cast<const std::byte*>(w.data) + static_cast<std::size_t>(j) * in_row, row.data(),
           row.size());
    if (q == QuantType::Q8_0) quantize_row_q8_0(row.data(), reinterpret_cast<BlockQ8_0*>(lw->row(j)), k);
    else quantize_row_q4_0(row.data(), reinterpret_cast<BlockQ4_0*>(lw->row(j)), k);
  }
  release_source_pages(w, 0, w.nbytes);
  return lw;
}

}  // namespace llmport::cpu
