// AVX512_BF16 linear kernel: vdpbf16ps on pre-packed k-pair-interleaved panels.
#include "kernels/cpu/cpu_kernels.hpp"

#define LLMPORT_CPU_NS avx512bf16
#define LLMPORT_USE_DPBF16 1
#include "kernels/cpu/linear_avx512_impl.inc"
