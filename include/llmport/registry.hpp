#pragma once
// The kernel registry: per (target, kernel, dtype, ISA, exact shape) the tile configs a
// sweep tried, their measured throughput and error vs the fp32 reference kernels, the best
// config, the models that use it and where it was measured. Data lives in JSON files
// data/registry/<target>/<kernel>_<dtype>.json (shipped, read-only at run time) and in a
// writable registry directory (e.g. <deployment>/registry/) that is looked up first.
// Also the library side of `llmport kernels validate|sweep` used by the deploy pipeline.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/kernels.hpp"
#include "llmport/model_config.hpp"

namespace llmport {

/// Dimensions of one kernel call, e.g. gemm {m, n, k}; gemv {n, k}; rmsnorm {m, dim};
/// rope {m, n_heads, head_dim}; swiglu/add {n}; attention_prefill {m, n_heads,
/// n_kv_heads, head_dim}; attention_decode {ctx, n_heads, n_kv_heads, head_dim}.
using KernelShape = std::map<std::string, int>;

/// "m=512 n=2048 k=2048" (keys in map order).
std::string shape_string(const KernelShape& s);

/// One measured config.
struct Candidate {
  TileConfig config;
  double gflops = 0;       ///< GFLOP/s (GEMM/GEMV/attention); 0 when not a FLOP kernel
  double gbps = 0;         ///< GB/s of bytes that must move (weights + activations)
  double mean_rel_l1 = 0;  ///< sum|y - y_ref| / sum|y_ref| vs the fp32 reference kernel
  double max_abs_err = 0;
  bool pass = true;        ///< within the issue-6 tolerance table
};

/// Where and how an entry was measured.
struct Provenance {
  std::string cpu;       ///< CPU model name
  std::string flags;     ///< ISA features relevant to the kernels
  std::string compiler;  ///< e.g. "GCC 12.2.0"
  std::string llmport_version;
  std::string date;  ///< ISO-8601 UTC
  int threads = 0;
  /// The provenance of this process and machine now.
  static Provenance current(int threads);
};

/// One (kernel, dtype, ISA, shape) row of the registry.
struct RegistryEntry {
  std::string target = "cpu";
  std::string kernel;  ///< gemm, gemv, rmsnorm, rope, swiglu, add, attention_prefill, attention_decode
  std::string dtype;   ///< bf16 | fp16 | fp32
  std::string isa;     ///< avx512bf16 | avx512 | avx2 | scalar
  KernelShape shape;
  std::vector<Candidate> candidates;
  TileConfig best;
  bool validated = false;     ///< passed `kernels validate` (phase 1) with `best`
  bool heuristic = false;     ///< best is the heuristic default (not swept)
  std::vector<std::string> used_by;  ///< model names
  Provenance provenance;
  /// Best candidate's throughput (GFLOP/s or GB/s per the kernel), 0 when unmeasured.
  double best_throughput() const;
};

nlohmann::json to_json(const RegistryEntry& e);
/// Throws ConfigError naming `where` and the field on malformed input.
RegistryEntry entry_from_json(const nlohmann::json& j, const std::string& where);

/// A registry: the shipped read-only directory plus an optional writable one.
class KernelRegistry {
 public:
  /// `shipped`: read-only (may not exist: then empty). `writable`: created on first save.
  /// Malformed JSON files throw ConfigError naming the file.
  KernelRegistry(std::filesystem::path shipped, std::optional<std::filesystem::path> writable);
  /// data/registry/<target> of this build (env LLMPORT_REGISTRY_DATA overrides the root).
  static std::filesystem::path shipped_dir(const std::string& target = "cpu");

  /// Exact lookup (writable first, then shipped); nullptr when unmeasured.
  const RegistryEntry* find(const std::string& kernel, const std::string& dtype,
                            const std::string& isa, const KernelShape& shape) const;
  /// Exact lookup; throws UsageError listing the nearest measured shapes of that kernel and
  /// the command that measures this one (`llmport kernels sweep MODEL ...`).
  const RegistryEntry& lookup(const std::string& kernel, const std::string& dtype,
                              const std::string& isa, const KernelShape& shape) const;
  /// Inserts or replaces (same kernel/dtype/isa/shape) in the writable registry, merging
  /// used_by. Throws UsageError when there is no writable registry.
  void record(const RegistryEntry& e);
  /// Writes the writable registry's JSON files and its supported_kernels.md.
  void save() const;
  /// Every entry (writable ones shadow shipped ones).
  std::vector<RegistryEntry> entries() const;
  const std::optional<std::filesystem::path>& writable_dir() const { return writable_; }

 private:
  std::filesystem::path shipped_;
  std::optional<std::filesystem::path> writable_;
  std::vector<RegistryEntry> shipped_entries_;
  std::vector<RegistryEntry> writable_entries_;
};

/// supported_kernels.md generated from entries (never edited by hand).
std::string supported_kernels_markdown(const std::vector<RegistryEntry>& entries);

/// A line of every supported_kernels.md llmport writes: a registry DIR's markdown without
/// it is the user's own file, which save() keeps (UsageError, exit 2).
inline constexpr const char* kSupportedKernelsMarker =
    "Generated from the registry JSON by `llmport kernels list --markdown`; do not edit.";

/// Throws UsageError when saving a registry into `dir` would replace a file llmport did not
/// write (checked before a command does its work).
void check_registry_outputs(const std::filesystem::path& dir);

/// How an Engine picks tile configs and packed-weight caching (EngineOptions::kernels).
struct KernelSelection {
  std::shared_ptr<const KernelRegistry> registry;  ///< may be null: heuristic only
  /// Serve unmeasured shapes with the heuristic default (outside deployments and in deploy
  /// phases 1-3). When false an unmeasured shape throws (KernelRegistry::lookup).
  bool allow_heuristic = true;
  int prefill_m = 512;  ///< m of the gemm entries to use (min(512, context) in deployments)
  std::optional<std::filesystem::path> cache_dir;  ///< kernel cache of packed weights
  /// Shapes served by the heuristic default (reports must say so), e.g. "gemm n=.. k=..".
  std::vector<std::string> heuristic_used;
  /// Configs chosen, one line per distinct weight shape (for reports/manifests).
  std::map<std::string, TileConfig> chosen;
  /// Packed-weight cache hits / misses.
  int cache_hits = 0, cache_misses = 0;

  /// Tile config for a linear W [n, k] on `backend` (empty for non-cpu backends).
  TileConfig linear_config(const Backend& backend, int n, int k, DType dtype);
  /// backend.make_linear with the selected config, through the kernel cache when set.
  std::unique_ptr<LinearWeight> make_linear(Backend& backend, const TensorView& w, DType dtype);
};

/// The tile-config keys a kernel uses: gemm {mr, np, kc, mc, nc, fma}, gemv {gnp}, others none.
/// Registry entries store only these, so a gemm and a gemv entry merge into one config.
TileConfig kernel_config_subset(const std::string& kernel, const TileConfig& cfg);

/// One row of `kernels validate`.
struct ValidationRow {
  std::string kernel;
  KernelShape shape;
  TileConfig config;
  double max_abs_err = 0;
  double max_rel_err = 0;  ///< max |d| / max(|ref|, atol) over elements
  double mean_rel_l1 = 0;
  double atol = 0, rtol = 0;
  bool pass = false;
  int n_checked = 0;  ///< elements compared
};

/// Element-wise tolerance of the issue-6 table: bf16/fp16 rtol 1.6e-2 with atol 1e-3
/// gemv, 1.5e-3 gemm, 5e-2 rmsnorm/rope/add, 8e-2 swiglu, 1e-1 attention; fp32 1e-4/1e-4.
std::pair<double, double> kernel_tolerance(const std::string& kernel, DType dtype);

/// Every kernel x shape `cfg` needs (prefill with m = prefill_m, decode with m = 1).
std::vector<std::pair<std::string, KernelShape>> model_kernel_shapes(const ModelConfig& cfg,
                                                                     int prefill_m);

/// Runs every kernel x shape the model needs on `backend` (its configs from `sel`, or
/// the heuristic default) against the reference kernels fed the same rounded random
/// inputs; element-wise atol/rtol per kernel_tolerance. Never throws on a mismatch
/// (rows say pass=false).
std::vector<ValidationRow> validate_kernels(const ModelConfig& cfg, DType dtype, Backend& backend,
                                            KernelSelection* sel = nullptr, int prefill_m = 512);

/// Sweeps the candidate tile configs of every linear shape of the model for the
/// prefill GEMM (`prefill` true, m = prefill_m) or the decode GEMV, records all candidates
/// and the fastest passing one in `registry` (writable) with used_by = model_name, saves.
/// Returns the recorded entries. `threads` as Backend::set_threads.
std::vector<RegistryEntry> sweep_kernels(const ModelConfig& cfg, DType dtype, bool prefill,
                                         KernelRegistry& registry, const std::string& model_name,
                                         int threads = 0, int prefill_m = 512, int reps = 3);

/// Records validation rows as validated entries (phase 1) with the configs used.
void record_validation(const std::vector<ValidationRow>& rows, DType dtype, const std::string& isa,
                       KernelRegistry& registry, const std::string& model_name, int threads);

}  // namespace llmport
