#pragma once
// Internal factory functions of the built-in backends (make_backend dispatches on name).
#include <memory>

#include "llmport/kernels.hpp"

namespace llmport {
/// Scalar fp32 oracle (src/kernels/reference/).
/// The scalar fp32 oracle; `threads` as Backend::set_threads (0: all cores).
// precise: level "fp64", the oracle's formulas in fp64 (reference_ops.hpp, precise::).
std::unique_ptr<Backend> make_reference_backend(int threads = 1, bool precise = false);
/// Fast ISA-dispatched CPU backend (src/kernels/cpu/).
std::unique_ptr<Backend> make_cpu_backend(int threads);
/// Throws unless every call has a weight and an output and all weights share n_in.
void check_linear_group(std::span<const LinearCall> calls);
/// Throws UsageError unless 0 <= row < w.n_out (gather_rows).
void check_gather_row(const LinearWeight& w, int row);
}  // namespace llmport
