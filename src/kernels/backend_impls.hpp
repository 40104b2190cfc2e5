#pragma once
// Internal factory functions of the built-in backends (make_backend dispatches on name).
#include <memory>

#include "llmport/kernels.hpp"

namespace llmport {
/// Scalar fp32 oracle (src/kernels/reference/).
std::unique_ptr<Backend> make_reference_backend();
/// Fast ISA-dispatched CPU backend (src/kernels/cpu/).
std::unique_ptr<Backend> make_cpu_backend(int threads);
}  // namespace llmport
