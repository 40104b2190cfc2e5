#pragma once
// Internal interface between the CPU backend (cpu_backend.cpp, generic x86-64 code) and
// its per-ISA kernel files (*_scalar.cpp, *_avx2.cpp, *_avx512.cpp, *_avx512bf16.cpp).
// Only plain structs and function pointers cross this boundary: ISA files must not
// instantiate std templates, whose out-of-line copies the linker could pick for generic
// code (an AVX-512 copy of std::vector would then crash a machine without AVX-512).
#include <cstddef>
#include <cstdint>

namespace llmport::cpu {

/// Instruction-set level of the CPU kernels, in dispatch order (best first when detected).
enum class Isa : int { Scalar = 0, Avx2 = 1, Avx512 = 2, Avx512Bf16 = 3 };

/// Output columns per packed weight panel (one zmm of fp32).
inline constexpr int kPanel = 16;

/// Element type of a packed weight.
enum class PackedType : int { F32 = 0, BF16 = 1, F16 = 2 };

/// A packed linear weight W [n, k] (y = x W^T). Columns are grouped in panels of 16
/// output rows of W; panel p holds W[16p .. 16p+15, :] zero-padded past n:
///  - BF16: [kp/2][16][2] (k pairs interleaved, the vdpbf16ps operand order), kp = k
///    rounded up to even, the odd tail zero;
///  - F16 / F32: [k][16].
/// panel_stride is the element count of one panel.
struct PackedView {
  const void* data = nullptr;
  PackedType type = PackedType::F32;
  int n = 0;         ///< output features (rows of W)
  int k = 0;         ///< input features
  int kp = 0;        ///< k padded (even for BF16)
  int n_panels = 0;  ///< ceil(n / 16)
  std::size_t panel_stride = 0;
};

/// Cache/register blocking of the linear kernels (TileConfig keys of the same names).
struct Blocking {
  int mr = 8;     ///< rows of x per micro-kernel call
  int np = 2;     ///< panels per micro-kernel call (nr = 16 * np output columns)
  int kc = 512;   ///< k block (elements)
  int mc = 96;    ///< rows of x per cache block
  int nc = 512;   ///< output columns per cache block (multiple of 16)
  int gnp = 4;    ///< decode GEMV (m = 1): panels streamed at once (1, 2 or 4)
  /// bf16 prefill GEMM (m > 1) with fp32 FMAs on weights widened in registers
  /// (KernelTable::linear_bf16_fma) instead of vdpbf16ps / shift emulation: 1 or 0.
  /// Only bf16 weights at the AVX-512 levels; decode GEMV ignores it.
  int fma = 0;
  /// Decode GEMV (m = 1) weight prefetch hint at the AVX-512 levels: 0 prefetcht1 (into
  /// L2), 1 prefetchnta (non-temporal). Numerics do not depend on it. A config without the
  /// "pf" key takes the kernel probe's choice for this machine ("gemv bf16"; 0 without a
  /// probe); the AVX2 and scalar kernels ignore it.
  int pf = 0;
};

/// Largest mr of the AVX-512 prefill micro-kernels for kernel K (0 bf16 vdpbf16ps or shift
/// emulation, 1 fp16, 2 fp32, 3 bf16 on fp32 FMAs) at np panels: the mr x np accumulators
/// plus the B operands fit the 32 zmm (np for K 0-2; for K 3 2*np widened + the hi mask +
/// one broadcast: 13 x 2, 8 x 3, 5 x 4; np 1 capped at 16 to bound the instantiations).
constexpr int avx512_max_mr(int K, int np) {
  if (K == 3) return np <= 1 ? 16 : np == 2 ? 13 : np == 3 ? 8 : 5;
  return np >= 4 ? 6 : 12;
}
/// Largest mr of the AVX2 prefill micro-kernel (one 16-column panel).
constexpr int kAvx2MaxMr = 4;

/// y[0..m, panels p0..p1) = a . W^T (+ bias). `a` is x rounded to bf16 [m][kp] (uint16)
/// for BF16 weights and fp32 x [m][k] otherwise; lda its row stride in elements.
/// y: [m][n] fp32, row stride n; only columns < n are written.
/// linear_bf16_fma instead takes `a` as fp32 [m][kp]: x rounded to bf16 and widened
/// (exact), odd tail zero; it supports np 1-4 and mr up to 16 / 13 / 8 / 5.
using LinearFn = void (*)(const PackedView& w, const void* a, int lda, int m, float* y,
                          const float* bias, int p0, int p1, const Blocking& blk);

/// RMSNorm of rows [r0, r1): y = x / sqrt(mean(x^2) + eps) * w. x, y: [m][dim].
using RmsNormFn = void (*)(const float* x, const float* w, float* y, int r0, int r1, int dim,
                           float eps);
/// Rotate-half RoPE of rows [r0, r1) of x [m][n_heads][head_dim] with the table
/// cos_sin [m][head_dim/2][2] (cos, sin).
using RopeFn = void (*)(float* x, int r0, int r1, int n_heads, int head_dim,
                        const float* cos_sin);
/// out[i] = silu(gate[i]) * up[i] for i in [i0, i1).
using SwigluFn = void (*)(const float* gate, const float* up, float* out, std::size_t i0,
                          std::size_t i1);
/// x[i] += y[i] for i in [i0, i1).
using AddFn = void (*)(float* x, const float* y, std::size_t i0, std::size_t i1);

/// Arguments of one attention work item: kv head `kvh`, query rows [t0, t1).
struct AttnArgs {
  const float* q = nullptr;        ///< [m][n_heads][head_dim]
  const float* k_cache = nullptr;  ///< [n_kv_heads][max_seq][head_dim]
  const float* v_cache = nullptr;  ///< [n_kv_heads][max_seq][head_dim]
  float* out = nullptr;            ///< [m][n_heads][head_dim]
  int max_seq = 0, start_pos = 0, m = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  int block_kv = 64;  ///< key positions per flash tile
  /// Every row's scores straight from the K rows, whatever the number of rows of a work
  /// item (batch-invariant mode): a row's output then does not depend on whether it was a
  /// decode step or part of a prefill chunk. Otherwise only decode (m = 1) at a GQA group
  /// of at most 8 does: never a choice by the rows of a work item, which follow the
  /// thread count (a row's output must not depend on it).
  bool direct_scores = false;
};
/// Flash-style (online softmax) causal GQA attention for one kv head and query rows
/// [t0, t1): every query head of the group reads the same K/V rows (no repetition).
/// scratch: at least attn_scratch_floats(...) floats, private to the caller's thread.
using AttentionFn = void (*)(const AttnArgs& a, int kvh, int t0, int t1, float* scratch);

/// Floats of scratch one attention work item with `rows` query tokens needs (the larger
/// of the generic kernel's and attention_flash's layouts; see attention_avx512.cpp).
inline std::size_t attn_scratch_floats(int rows, int group, int head_dim, int block_kv) {
  const std::size_t r = static_cast<std::size_t>(rows) * group;
  const std::size_t hdp = (static_cast<std::size_t>(head_dim) + 15) / 16 * 16;
  const std::size_t bc = block_kv > 64 ? static_cast<std::size_t>(block_kv) : 64;
  return r * hdp + r * 3 + r * bc + hdp * bc + 64;
}

/// The kernels of one ISA level.
struct KernelTable {
  Isa isa = Isa::Scalar;
  LinearFn linear_bf16 = nullptr;
  LinearFn linear_bf16_fma = nullptr;  ///< bf16 GEMM with fp32 FMAs; null below AVX-512
  LinearFn linear_f16 = nullptr;
  LinearFn linear_f32 = nullptr;
  RmsNormFn rmsnorm = nullptr;
  RopeFn rope = nullptr;
  SwigluFn swiglu = nullptr;
  AddFn add = nullptr;
  AttentionFn attention = nullptr;
};

/// Best level this CPU supports (AVX512_BF16 -> AVX-512F -> AVX2 -> scalar).
Isa detect_isa() noexcept;
/// True when the CPU can run level `isa`.
bool isa_supported(Isa isa) noexcept;
/// "avx512bf16", "avx512", "avx2", "scalar".
const char* isa_name(Isa isa) noexcept;
/// Kernel table of one level (callers check isa_supported first).
const KernelTable& kernel_table(Isa isa) noexcept;

// Per-ISA entry points (defined in the ISA files).
#define LLMPORT_DECLARE_ISA_KERNELS(ns)                                                    \
  namespace ns {                                                                           \
  void linear_bf16(const PackedView&, const void*, int, int, float*, const float*, int,   \
                   int, const Blocking&);                                                  \
  void linear_f16(const PackedView&, const void*, int, int, float*, const float*, int,    \
                  int, const Blocking&);                                                   \
  void linear_f32(const PackedView&, const void*, int, int, float*, const float*, int,    \
                  int, const Blocking&);                                                   \
  void rmsnorm(const float*, const float*, float*, int, int, int, float);                  \
  void rope(float*, int, int, int, int, const float*);                                     \
  void swiglu(const float*, const float*, float*, std::size_t, std::size_t);               \
  void add(float*, const float*, std::size_t, std::size_t);                                \
  void attention(const AttnArgs&, int, int, int, float*);                                  \
  }
LLMPORT_DECLARE_ISA_KERNELS(scalar)
LLMPORT_DECLARE_ISA_KERNELS(avx2)
LLMPORT_DECLARE_ISA_KERNELS(avx512)
namespace avx512 {
void linear_bf16_fma(const PackedView&, const void*, int, int, float*, const float*, int, int,
                     const Blocking&);
}
namespace avx512 {
/// AttentionFn with AVX-512 intrinsics (attention_avx512.cpp): transposed K tiles of 64
/// keys, register-blocked scores and P.V; any head_dim. Ignores AttnArgs::block_kv.
void attention_flash(const AttnArgs&, int, int, int, float*);
}  // namespace avx512
namespace avx512bf16 {
void linear_bf16(const PackedView&, const void*, int, int, float*, const float*, int, int,
                 const Blocking&);
}
#undef LLMPORT_DECLARE_ISA_KERNELS

}  // namespace llmport::cpu
