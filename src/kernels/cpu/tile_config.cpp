// Tile configs of the CPU linear kernels: parsing (TileConfig -> Blocking), the heuristic
// default per ISA level and dtype, and the candidates a registry sweep measures.
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"
#include "llmport/kernel_probe.hpp"
#include "llmport/quant.hpp"

namespace llmport::cpu {

Blocking blocking_from_config(const TileConfig& cfg) {
  Blocking b;
  for (const auto& [key, val] : cfg) {
    if (key == "fma") {
      if (val != 0 && val != 1)
        throw UsageError("cpu tile config: 'fma' must be 0 (vdpbf16ps) or 1 (fp32 FMAs) (got " +
                         std::to_string(val) + ")");
      b.fma = val;
      continue;
    }
    if (key == kPrefetchTileKey) {
      if (val != 0 && val != 1)
        throw UsageError("cpu tile config: 'pf' must be 0 (prefetcht1) or 1 (prefetchnta) (got " +
                         std::to_string(val) + ")");
      b.pf = val;
      continue;
    }
    if (key == kActTileKey) {  // a quantized weight's key (CpuQuantLinear); floats ignore it
      if (val != 0 && val != 1)
        throw UsageError("cpu tile config: 'act' must be 0 (fp32 activations) or 1 (q8 blocks) (got " +
                         std::to_string(val) + ")");
      continue;
    }
    if (val < 1)
      throw UsageError("cpu tile config: '" + key + "' must be >= 1 (got " +
                       std::to_string(val) + ")");
    if (key == "mr") b.mr = val;
    else if (key == "np") b.np = val;
    else if (key == "kc") b.kc = val;
    else if (key == "mc") b.mc = val;
    else if (key == "nc") b.nc = val;
    else if (key == "gnp") b.gnp = val;
    else
      throw UsageError("cpu tile config: unknown parameter '" + key +
                       "' (expected mr, np, kc, mc, nc, gnp, fma, pf, act)");
  }
  return b;
}

Blocking blocking_from_config(const TileConfig& cfg, DType dtype) {
  const Blocking b = blocking_from_config(cfg);
  if (b.fma && dtype != DType::BF16)
    throw UsageError(std::string("cpu tile config: 'fma': 1 applies to bf16 weights only (this "
                                 "weight is ") + std::string(dtype_name(dtype)) + ")");
  return b;
}

void check_tiles_run_as_given(Isa isa, DType dtype, const TileConfig& cfg) {
  const Blocking b = blocking_from_config(cfg, dtype);
  const auto named = [&](const char* key) { return cfg.count(key) > 0; };
  const auto refuse = [&](const std::string& what) {
    throw UsageError("cpu tile config: " + what + " (" + isa_name(isa) + ", " +
                     std::string(dtype_name(dtype)) + " weights)");
  };
  if (isa == Isa::Scalar) return;  // the scalar kernels read no tile
  if (isa == Isa::Avx2) {
    if (named("mr") && b.mr > kAvx2MaxMr)
      refuse("'mr' " + std::to_string(b.mr) + " is above the micro-kernel's " +
             std::to_string(kAvx2MaxMr) + " rows");
    return;  // one panel per call and no GEMV streams: np and gnp are not read
  }
  const bool fma = b.fma && dtype == DType::BF16;
  const int K = fma ? 3 : dtype == DType::BF16 ? 0 : dtype == DType::F16 ? 1 : 2;
  if (named("np") && (fma ? b.np > 4 : (b.np != 1 && b.np != 2 && b.np != 4)))
    refuse("'np' " + std::to_string(b.np) + " is not one the micro-kernels run (" +
           (fma ? "1 to 4" : "1, 2 or 4") + ")");
  if (named("mr") && b.mr > avx512_max_mr(K, b.np))
    refuse("'mr' " + std::to_string(b.mr) + " is above the " + std::to_string(avx512_max_mr(K, b.np)) +
           " rows the micro-kernel holds in registers at np " + std::to_string(b.np));
  if (named("gnp") && b.gnp != 1 && b.gnp != 2 && b.gnp != 4)
    refuse("'gnp' " + std::to_string(b.gnp) + " is not one the decode GEMV runs (1, 2 or 4)");
}

TileSchema tile_schema(OpKind kind) {
  constexpr int kMax = 1 << 30;
  const TileSchema gemm = {{"mr", 1, 16, "rows of x per micro-kernel call (at most the level's register limit)"},
                           {"np", 1, 4, "16-column panels per micro-kernel call (1, 2, 4; fma 1: 1-4)"},
                           {"kc", 1, kMax, "k block in elements"},
                           {"mc", 1, kMax, "rows of x per cache block"},
                           {"nc", 1, kMax, "output columns per cache block"},
                           {"fma", 0, 1, "bf16 GEMM on fp32 FMAs (1) or vdpbf16ps (0)"}};
  const TileSchema gemv = {{"gnp", 1, 4, "decode GEMV panels streamed at once (1, 2 or 4)"},
                           {kPrefetchTileKey, 0, 1,
                            "decode GEMV weight prefetch: prefetcht1 (0) or prefetchnta (1); absent: the "
                            "kernel probe's choice for this machine"},
                           {kActTileKey, 0, 1,
                            "q8_0/q4_0 weights: fp32 activations (0) or q8 activation blocks (1), "
                            "one choice per weight for every m (float weights ignore it)"}};
  if (kind == OpKind::Gemm) return gemm;
  if (kind == OpKind::Gemv) return gemv;
  if (kind == OpKind::LinearGroup) {
    TileSchema both = gemm;
    both.insert(both.end(), gemv.begin(), gemv.end());
    return both;
  }
  return {};
}

namespace {
// Largest vdpbf16ps k block: with mc 96 its A block (96 x kc bf16, 576 KiB at 3072) and the
// 4-panel B micro-panel (128 B x kc) share the 1-2 MiB L2 of the cores it was measured on.
constexpr int kMaxKc = 3072;
// The same for the paths whose A is fp32 (fp16 and fp32 weights): 768 KiB at 2048.
constexpr int kMaxKcF32A = 2048;

bool fma_applies(Isa isa, DType dtype) {
  return dtype == DType::BF16 && (isa == Isa::Avx512 || isa == Isa::Avx512Bf16);
}
}  // namespace

int equal_k_block(int k, int max_kc) {
  if (k <= 0 || max_kc < 2) return max_kc < 2 ? 2 : max_kc;
  const int blocks = (k + max_kc - 1) / max_kc;
  const int kc = (k + blocks - 1) / blocks;
  return kc + kc % 2;
}

TileConfig default_tile_config(Isa isa, DType dtype, int n, int k, bool probe) {
  (void)n;
  if (isa == Isa::Avx2 || isa == Isa::Scalar)
    return {{"mr", 4}, {"np", 1}, {"kc", 256}, {"mc", 64}, {"nc", 256}, {"gnp", 1}};
  // fp32 and fp16 weights (fp32 x): 6 rows x 4 panels and the whole k up to kMaxKcF32A.
  // Against 12 x 2 at kc 256 (fp32) / 512 (fp16), m 512, 2 threads, Zen 4, medians of 3
  // interleaved runs: fp32 16384 x 2048 190 -> 222 GFLOP/s, 1024 x 3072 153 -> 219; fp16
  // 183 -> 214 and 188 -> 215 (the FMA peak: 231). 12 x 2 stays a sweep candidate.
  if (dtype == DType::F32 || dtype == DType::F16)
    return {{"mr", 6}, {"np", 4}, {"kc", equal_k_block(k, kMaxKcF32A)}, {"mc", 96}, {"nc", 512}, {"gnp", 4}};
  // bf16 without AVX512_BF16: the fp32-FMA GEMM issues the same FMAs as the shift
  // emulation minus its 2 * mr A-widening uops per k pair, so it is the default there.
  const TileConfig fma_cfg = {{"mr", 13}, {"np", 2}, {"kc", 1024}, {"mc", 91}, {"nc", 512}, {"gnp", 4}, {"fma", 1}};
  if (isa == Isa::Avx512 && dtype == DType::BF16) return fma_cfg;
  // With AVX512_BF16 the winner depends on the core (vdpbf16ps is ~0.5x the FMA flop
  // rate on the Intel Xeons measured, ~2x on Zen 4/5): the kernel probe times both on
  // this machine (llmport/kernel_probe.hpp; vdpbf16ps unless FMA wins by the margin) and
  // `kernels sweep` refines per shape (docs/performance.md). Asked only here, so a
  // process that never needs this default never probes.
  if (isa == Isa::Avx512Bf16 && dtype == DType::BF16 && probe &&
      probed_choice("gemm bf16", isa_name(isa)) == 1)
    return fma_cfg;
  // vdpbf16ps: 6 rows x 4 panels. A k pair then costs 4 B loads + 6 A broadcasts per 24
  // vdpbf16ps, against 2 + 12 for 12 x 2; on Zen 4 (where this path is the default) the
  // sweep put 6 x 4 first on 9 of the 11 qwen3-0.6b / llama-3.2-1b shapes, +7% median.
  // kc: the whole k up to kMaxKc, else k in equal blocks (equal_k_block).
  if (isa == Isa::Avx512Bf16 && dtype == DType::BF16)
    return {{"mr", 6}, {"np", 4}, {"kc", equal_k_block(k, kMaxKc)}, {"mc", 96}, {"nc", 512},
            {"gnp", 4}, {"fma", 0}};
  TileConfig c = {{"mr", 12}, {"np", 2}, {"kc", 512}, {"mc", 96}, {"nc", 512}, {"gnp", 4}};
  if (fma_applies(isa, dtype)) c["fma"] = 0;
  return c;
}

TileConfig default_quant_tile_config(Isa isa, QuantType q, int n, int k, bool probe) {
  (void)n;
  (void)k;
  // Decode GEMV, measured at every level on the qwen3-0.6b shapes (bench/results/
  // quant_act_gemv.md): q8 activation blocks were 1.4-3.9x faster than widening the weights
  // to fp32 at every level, shape and format with the row-major blocks, and ~4-6x on the
  // 16-column panels (integer dot products of 64 bytes per vpdpbusd instead of conversions
  // and multiplies), so it is the default everywhere, unless the kernel probe measured fp32
  // activations faster by the margin on this machine.
  if (probe)
    if (const auto v = probed_choice("gemv " + std::string(quant_name(q)), isa_name(isa)))
      return {{kActTileKey, *v}};
  return {{kActTileKey, 1}};
}

std::vector<TileConfig> candidate_tile_configs(Isa isa, DType dtype, bool prefill) {
  std::vector<TileConfig> out;
  const bool narrow = isa == Isa::Avx2 || isa == Isa::Scalar;
  if (!prefill) {
    for (int g : {1, 2, 4}) out.push_back({{"gnp", g}});
    return out;
  }
  struct Reg { int mr, np; };
  std::vector<Reg> regs = narrow ? std::vector<Reg>{{4, 1}, {2, 1}}
                                 : std::vector<Reg>{{12, 2}, {8, 2}, {6, 4}, {12, 1}};
  for (const Reg& r : regs)
    for (int kc : {256, 512}) {
      const int mc = r.mr * (96 / r.mr);
      out.push_back({{"mr", r.mr}, {"np", r.np}, {"kc", kc}, {"mc", mc}, {"nc", 512}});
    }
  if (!narrow) {
    out.push_back({{"mr", 12}, {"np", 2}, {"kc", 1024}, {"mc", 96}, {"nc", 1024}});
    out.push_back({{"mr", 6}, {"np", 4}, {"kc", 512}, {"mc", 96}, {"nc", 2048}});
    // No kc: the default's (equal_k_block, the whole k up to kMaxKc), and a middle one.
    out.push_back({{"mr", 6}, {"np", 4}, {"mc", 96}, {"nc", 512}});
    out.push_back({{"mr", 6}, {"np", 4}, {"kc", 1024}, {"mc", 96}, {"nc", 512}});
  }
  if (fma_applies(isa, dtype)) {
    // Every bf16 candidate names its path, so none inherits the default's.
    for (TileConfig& c : out) c["fma"] = 0;
    // fp32-FMA tiles at the register limit of each np (mr x np accumulators + 2 np
    // widened B registers + mask + broadcast <= 32 zmm); kc 1024 halves the C reloads
    // (measured +3-5% over 512 at the qwen3-0.6b shapes on a Xeon, docs/performance.md).
    const Reg fma_regs[] = {{13, 2}, {12, 2}, {8, 3}, {5, 4}, {16, 1}};
    for (const Reg& r : fma_regs) {
      const int mc = r.mr * (96 / r.mr);
      out.push_back({{"fma", 1}, {"mr", r.mr}, {"np", r.np}, {"kc", 1024}, {"mc", mc},
                     {"nc", 256 * r.np}});
    }
    out.push_back({{"fma", 1}, {"mr", 13}, {"np", 2}, {"kc", 512}, {"mc", 91}, {"nc", 512}});
    out.push_back({{"fma", 1}, {"mr", 13}, {"np", 2}, {"kc", 2048}, {"mc", 52}, {"nc", 512}});
  }
  return out;
}

}  // namespace llmport::cpu
