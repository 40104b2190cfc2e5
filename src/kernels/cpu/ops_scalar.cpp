// Element-wise ops and attention compiled for the scalar level (see ops_impl.inc).
#include "kernels/cpu/cpu_kernels.hpp"

#define LLMPORT_CPU_NS scalar
#include "kernels/cpu/ops_impl.inc"
