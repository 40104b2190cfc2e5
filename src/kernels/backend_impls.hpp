#pragma once
// Internal factory functions of the built-in backends (make_backend dispatches on name).
#include <cstdint>
#include <memory>

#include "llmport/kernels.hpp"

namespace llmport {
/// The scalar fp32 oracle (src/kernels/reference/); `threads` as Backend::set_threads (0:
/// all cores). `rounding_noise`: the rounding-noise oracle (level "rounding-noise",
/// reference_ops.hpp), whose quantized linears carry random errors of the format's step;
/// `draw` picks the realization of that noise.
std::unique_ptr<Backend> make_reference_backend(int threads = 1, bool rounding_noise = false, uint64_t draw = 0);
/// Fast ISA-dispatched CPU backend (src/kernels/cpu/).
std::unique_ptr<Backend> make_cpu_backend(int threads);
/// Throws unless every call has a weight and an output and all weights share n_in.
void check_linear_group(std::span<const LinearCall> calls);
/// Throws UsageError unless 0 <= row < w.n_out (gather_rows).
void check_gather_row(const LinearWeight& w, int row);
}  // namespace llmport
