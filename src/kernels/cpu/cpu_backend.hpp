#pragma once
// The fast CPU backend's internals shared with its tests, the kernel registry
// (src/registry/) and the kernel cache: ISA forcing, tile configs and packed weights.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/page_buffer.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "llmport/kernels.hpp"

namespace llmport::cpu {

/// Creates the CPU backend at a forced ISA level (tests, `kernels validate --isa`).
/// Throws UsageError when this CPU cannot run `isa`.
std::unique_ptr<Backend> make_cpu_backend_isa(int threads, Isa isa);
/// Parses "avx512bf16" | "avx512" | "avx2" | "scalar". Throws UsageError otherwise.
Isa parse_isa(const std::string& name);
/// Levels this CPU can run, best first.
std::vector<Isa> supported_isas();
/// The level make_cpu_backend uses: env LLMPORT_CPU_ISA when set (must be supported),
/// else detect_isa().
Isa default_isa();

/// TileConfig keys the linear kernels understand: mr, np, kc, mc, nc, fma (prefill GEMM)
/// and gnp (decode GEMV); act (0|1, a quantized weight's key) is accepted and ignored. Unknown keys, values < 1, or fma other than 0/1 throw
/// UsageError naming the key. fma = 1 selects the fp32-FMA bf16 GEMM (Blocking::fma).
Blocking blocking_from_config(const TileConfig& cfg);
/// Same, for a weight of `dtype`: also throws UsageError for fma = 1 on a weight that is
/// not bf16. (The backend rejects fma = 1 below the AVX-512 levels, at make_linear/linear.)
Blocking blocking_from_config(const TileConfig& cfg, DType dtype);
/// Throws UsageError naming the key when the linear kernels at `isa` would not run a value
/// `cfg` names as given for a weight of `dtype`: mr above the micro-kernel's register limit
/// at its np (avx512_max_mr, kAvx2MaxMr), np other than 1, 2, 4 (1-4 with fma 1), gnp other
/// than 1, 2, 4. The kernels would clamp them, and a registry entry would record a config
/// that never ran. AVX2 reads only mr of these, the scalar kernels no tile; keys `cfg` leaves
/// out take the kernels' own defaults. Also throws what blocking_from_config throws.
void check_tiles_run_as_given(Isa isa, DType dtype, const TileConfig& cfg);
/// Heuristic default config for a linear of W [n, k] in `dtype` at level `isa`
/// (used until a sweep measured the shape). bf16 at avx512bf16: the fma path when the
/// kernel probe (llmport/kernel_probe.hpp) measured it faster on this machine and `probe`
/// is true (false: the ISA-flag default; the probe is neither run nor read).
TileConfig default_tile_config(Isa isa, DType dtype, int n, int k, bool probe = true);
/// k block (elements) that cuts k into the fewest equal blocks of at most `max_kc`,
/// rounded up to a whole k pair: k itself when k <= max_kc (and even). Each block beyond the
/// first reloads and stores the whole C tile, so fewer, equal blocks beat a fixed kc that
/// leaves a short tail. k <= 0 gives max_kc; max_kc < 2 gives 2.
int equal_k_block(int k, int max_kc);
/// Default config of a q8_0/q4_0 linear of W [n, k] at level `isa`: {"act": 0|1} (the
/// measured decode choice, the kernel probe's when `probe`; never depends on m).
TileConfig default_quant_tile_config(Isa isa, QuantType q, int n, int k, bool probe = true);
/// Tests: the next machine_kernel_probe() (llmport/kernel_probe.hpp) loads or measures
/// again, under the environment then in force.
void forget_machine_probe();

/// True on the thread running measure_kernel_paths (the probe's own linears take the
/// default prefetch hint instead of asking for the probe).
bool in_probe_measurement();
/// Configs a sweep tries: prefill GEMM (mr, np, kc, mc, nc) or decode GEMV (gnp).
std::vector<TileConfig> candidate_tile_configs(Isa isa, DType dtype, bool prefill);
/// The tile keys of each op: gemm {mr, np, kc, mc, nc, fma}; gemv {gnp, act}; linear_group both
/// (a group runs as GEMM or GEMV by m); others none. Values >= 1 (mr, np and gnp within the
/// level's kernels: check_tiles_run_as_given), fma 0 or 1.
TileSchema tile_schema(OpKind kind);

/// A weight packed in 16-column panels (see PackedView) in backend-owned, 64-byte
/// aligned memory (a PageBuffer: 2 MiB aligned + MADV_HUGEPAGE from 2 MiB on).
class CpuLinear : public LinearWeight {
 public:
  CpuLinear(int n, int k, DType dt, const TileConfig& cfg);
  ~CpuLinear() override = default;
  CpuLinear(const CpuLinear&) = delete;
  CpuLinear& operator=(const CpuLinear&) = delete;
  std::size_t bytes() const override { return nbytes_; }
  std::span<const std::byte> packed() const override {
    return {buf_.data(), nbytes_};
  }
  const PackedView& view() const { return view_; }
  void* data() { return buf_.data(); }
  const Blocking& blocking() const { return blk_; }
  /// Re-blocks for another tile config without repacking (the panel layout does not
  /// depend on the config). Throws UsageError for a bad config.
  void set_config(const TileConfig& cfg) {
    blk_ = blocking_from_config(cfg, dtype);
    config = cfg;
  }

 private:
  std::size_t nbytes_ = 0;
  PageBuffer buf_;
  PackedView view_;
  Blocking blk_;
};

/// Row stride (elements of `esz` bytes, 2 or 4) of the A operand the backend prepares for
/// a GEMM over rows of k elements: the smallest odd number of 64-byte lines that holds k.
/// The micro-kernels read mr rows at the same k together; at a power-of-two stride (k =
/// 2048 bf16 = 4 KiB) those rows all map to one set of the 8-way L1D and evict each other
/// every k step (measured 1.2-1.3x slower prefill GEMMs at k = 2048 on Zen 4). With an odd
/// line count, consecutive rows fall in distinct sets.
int a_row_stride(int k, std::size_t esz);

/// Packed byte count of W [n, k] in `dtype`.
std::size_t packed_bytes(int n, int k, DType dtype);
/// Packs `w` [n_out, n_in] (any stored dtype) into a new CpuLinear of dtype `compute`.
/// Throws ShapeError for a tensor that is not 2-D.
std::unique_ptr<CpuLinear> pack_linear(const TensorView& w, DType compute,
                                       const TileConfig& cfg, int threads);

}  // namespace llmport::cpu
