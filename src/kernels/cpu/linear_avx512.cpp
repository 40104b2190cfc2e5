// AVX-512F linear kernels: fp32 and fp16 (vcvtph2ps) weights, and bf16 weights
// emulated with shift/mask + FMA for CPUs without AVX512_BF16.
#include "kernels/cpu/cpu_kernels.hpp"

#define LLMPORT_CPU_NS avx512
#include "kernels/cpu/linear_avx512_impl.inc"
