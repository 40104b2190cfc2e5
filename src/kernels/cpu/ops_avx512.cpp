// Element-wise ops and attention compiled for the avx512 level (see ops_impl.inc).
#include "kernels/cpu/cpu_kernels.hpp"

#define LLMPORT_CPU_NS avx512
#include "kernels/cpu/ops_impl.inc"
