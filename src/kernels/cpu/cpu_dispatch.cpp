// Run-time ISA detection and the per-level kernel tables.
#include <initializer_list>

#include "kernels/cpu/cpu_kernels.hpp"

namespace llmport::cpu {

bool isa_supported(Isa isa) noexcept {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Scalar:
      return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512:
      return isa_supported(Isa::Avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq");
    case Isa::Avx512Bf16:
      return isa_supported(Isa::Avx512) && __builtin_cpu_supports("avx512bf16");
  }
  return false;
}

Isa detect_isa() noexcept {
  for (Isa i : {Isa::Avx512Bf16, Isa::Avx512, Isa::Avx2})
    if (isa_supported(i)) return i;
  return Isa::Scalar;
}

const char* isa_name(Isa isa) noexcept {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    case Isa::Avx512Bf16: return "avx512bf16";
  }
  return "?";
}

namespace {
#define LLMPORT_TABLE(level, ns, bf16ns)                                                  \
  KernelTable t;                                                                          \
  t.isa = level;                                                                          \
  t.linear_bf16 = &bf16ns::linear_bf16;                                                   \
  t.linear_f16 = &ns::linear_f16;                                                         \
  t.linear_f32 = &ns::linear_f32;                                                         \
  t.rmsnorm = &ns::rmsnorm;                                                               \
  t.rope = &ns::rope;                                                                     \
  t.swiglu = &ns::swiglu;                                                                 \
  t.add = &ns::add;                                                                       \
  t.attention = &ns::attention;                                                           \
  return t;

KernelTable make_scalar() { LLMPORT_TABLE(Isa::Scalar, scalar, scalar) }
KernelTable make_avx2() { LLMPORT_TABLE(Isa::Avx2, avx2, avx2) }
KernelTable make_avx512() {
  KernelTable t = [] { LLMPORT_TABLE(Isa::Avx512, avx512, avx512) }();
  t.linear_bf16_fma = &avx512::linear_bf16_fma;
  t.attention = &avx512::attention_flash;
  return t;
}
KernelTable make_avx512bf16() {
  KernelTable t = [] { LLMPORT_TABLE(Isa::Avx512Bf16, avx512, avx512bf16) }();
  t.linear_bf16_fma = &avx512::linear_bf16_fma;  // AVX-512F code: no bf16 instruction
  t.attention = &avx512::attention_flash;
  return t;
}
#undef LLMPORT_TABLE
}  // namespace

const KernelTable& kernel_table(Isa isa) noexcept {
  static const KernelTable tables[4] = {make_scalar(), make_avx2(), make_avx512(),
                                        make_avx512bf16()};
  return tables[static_cast<int>(isa)];
}

}  // namespace llmport::cpu
