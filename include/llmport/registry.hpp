#pragma once
// The kernel registry: per (target, kernel, dtype, ISA, exact shape) the tile configs a
// sweep tried, their measured throughput and error vs the fp32 reference kernels, the best
// config, the models that use it and where it was measured. Data lives in JSON files
// data/registry/<target>/<kernel>_<dtype>.json (shipped, read-only at run time) and in a
// writable registry directory (e.g. <deployment>/registry/) that is looked up first.
// Also the library side of `llmport kernels validate|sweep` used by the deploy pipeline.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/kernel_cache.hpp"
#include "llmport/kernels.hpp"
#include "llmport/machine_fingerprint.hpp"
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

/// Throws nlohmann::json::exception on a missing or mistyped field, ConfigError naming the
/// field on an integer that is not an int (a float such as 1e300 included).
MachineFingerprint fingerprint_from_json(const nlohmann::json& j);

/// Where and how an entry was measured.
struct Provenance {
  std::string cpu;       ///< CPU model name
  std::string flags;     ///< ISA features relevant to the kernels
  std::string compiler;  ///< e.g. "GCC 12.2.0"
  std::string llmport_version;
  std::string date;  ///< ISO-8601 UTC
  int threads = 0;
  /// The machine that measured it; entries of several machines live side by side and a
  /// lookup uses only this machine's (KernelSelection). Empty in entries written before
  /// fingerprints existed: those count as foreign.
  MachineFingerprint fingerprint;
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
  /// <data dir>/registry/<target> (llmport/data_dir.hpp: $LLMPORT_DATA_DIR, the install
  /// prefix's share/llmport, or the source tree's data/). Throws UsageError when there is
  /// no data directory.
  static std::filesystem::path shipped_dir(const std::string& target = "cpu");

  /// Exact lookup of an entry measured on `machine` (writable first, then shipped);
  /// nullptr when this machine has not measured it.
  const RegistryEntry* find(const std::string& kernel, const std::string& dtype,
                            const std::string& isa, const KernelShape& shape,
                            const MachineFingerprint& machine) const;
  /// Entries of the same (kernel, dtype, isa, shape) measured on other machines than
  /// `machine` (or with no fingerprint): never used by a lookup, counted by KernelSelection.
  std::vector<const RegistryEntry*> find_foreign(const std::string& kernel, const std::string& dtype,
                                                 const std::string& isa, const KernelShape& shape,
                                                 const MachineFingerprint& machine) const;
  /// Exact lookup on `machine`; throws UsageError listing the nearest shapes this machine
  /// measured, how many entries of this shape other machines measured, and the command that
  /// measures it here (`llmport kernels sweep MODEL ...`).
  const RegistryEntry& lookup(const std::string& kernel, const std::string& dtype,
                              const std::string& isa, const KernelShape& shape,
                              const MachineFingerprint& machine) const;
  /// Inserts or replaces (same kernel/dtype/isa/shape and machine) in the writable
  /// registry, merging used_by. Throws UsageError when there is no writable registry.
  void record(const RegistryEntry& e);
  /// Writes the writable registry's JSON files and its supported_kernels.md.
  void save() const;
  /// Every entry of every machine (writable ones shadow shipped ones of the same machine).
  std::vector<RegistryEntry> entries() const;
  const std::optional<std::filesystem::path>& writable_dir() const { return writable_; }
  const std::filesystem::path& shipped_path() const { return shipped_; }

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
  /// The machine lookups match against; unset: MachineFingerprint::current(backend.threads())
  /// at the first lookup (tests plant another one).
  std::optional<MachineFingerprint> machine;
  /// Shapes served by the heuristic default (reports must say so), e.g. "gemm n=.. k=..":
  /// unmeasured here, or measured only on another machine.
  std::vector<std::string> heuristic_used;
  /// Registry entries of the looked-up shapes that another machine measured (or that carry
  /// no fingerprint): skipped, their shapes served by the heuristic default instead.
  int foreign_skipped = 0;
  /// Where the skipped entries were measured: MachineFingerprint::describe() -> count.
  std::map<std::string, int> foreign_machines;
  /// Shapes served by a registry entry measured on this machine, e.g. "gemm bf16 k=.. m=.. n=..".
  std::vector<std::string> registry_used;
  /// Quantized weights' shapes without such an entry, e.g. "gemv q4_0 k=.. n=..": served by
  /// the backend's per-level act default (measured by the kernel probe where it runs), so
  /// not counted in heuristic_used, but a report must not call them "from the registry".
  std::vector<std::string> quant_default_used;
  /// Configs chosen, one line per distinct weight shape (for reports/manifests).
  std::map<std::string, TileConfig> chosen;
  /// Packed-weight cache hits / misses (weights packed), and the misses whose file could
  /// not be written (KernelCache warned; their packed weights serve this run only).
  int cache_hits = 0, cache_misses = 0, cache_not_written = 0;

  /// Tile config for a linear W [n, k] on `backend`: backend.default_tiles (gemm at
  /// prefill_m) with the gemm and gemv keys of this machine's registry entries over it.
  /// A backend whose gemm/gemv take no tile keys (reference) gets its default (empty)
  /// without a lookup.
  TileConfig linear_config(const Backend& backend, int n, int k, DType dtype);
  /// backend.make_linear with the selected config, through the kernel cache when set.
  /// Throws what the backend throws for the config; UsageError naming the registry
  /// directory and the entry when a registry entry's config is refused (a tile value the
  /// kernels would not run as given).
  std::unique_ptr<LinearWeight> make_linear(Backend& backend, const TensorView& w, DType dtype);
  /// Tile config of a linear W [n, k] block-quantized to `quant`: backend.default_tiles of
  /// its gemv (the key "act", ActQuant) with this machine's registry entry "gemv <quant>"
  /// over it; the one config serves every m (the engine never picks by batch size).
  TileConfig quantized_linear_config(const Backend& backend, int n, int k, QuantType quant);
  /// backend.make_quantized_linear with the selected config, through the kernel cache when
  /// set (a second load of a quantized model reads the packed blocks: cache_hits).
  /// `act` set: that activation format instead of the selected one.
  std::unique_ptr<LinearWeight> make_quantized_linear(Backend& backend, const TensorView& w, QuantType quant,
                                                      std::optional<ActQuant> act = {});

  /// The one line about skipped foreign entries ("" when none), e.g. "registry: 12 entries
  /// skipped: measured on GenuineIntel family 6 model 143 stepping 8 (avx512_bf16, 2 threads,
  /// llmport 0.1.0), not this machine; heuristic defaults serve instead; 'llmport kernels
  /// sweep MODEL' tunes here".
  std::string foreign_line() const;
  /// The one line about lookup misses ("" when none or when no registry is open).
  std::string miss_line() const;
  /// Writes foreign_line() and miss_line() (those not empty) to stderr, once per selection
  /// (the Engine calls it after making its weights): one line each per run.
  void announce();
  bool announced = false;
  /// Adds one kernel-cache call's outcome to cache_hits / cache_misses / cache_not_written.
  void count(const CacheOutcome& out);
};

/// The entries of `cfg` that `backend`'s kernel `kernel` (an op_name: "gemm", "gemv", ...)
/// understands: tile_subset(backend.tile_schema(kind), cfg); cpu: gemm {mr, np, kc, mc, nc,
/// fma}, gemv {gnp}. Empty for other ops and names that are no op. Registry entries store
/// only these, so a gemm and a gemv entry merge into one config.
TileConfig kernel_config_subset(const std::string& kernel, const TileConfig& cfg,
                                const Backend& backend);
/// Same with the schema of backend `target` (made once per target name and kept): for
/// callers that hold registry entries of a target but no backend object.
TileConfig kernel_config_subset(const std::string& kernel, const TileConfig& cfg,
                                const std::string& target = "cpu");

/// One row of `kernels validate` / phase 1: one (kernel, shape, tile config) the engine
/// dispatches, every output element compared with the fp32 reference fed the same inputs.
struct ValidationRow {
  std::string kernel;  ///< gemm, gemv, linear_group_qkv, linear_group_gate_up, gather_rows, ...
  std::string path;    ///< the engine call a linear row stands for: o_proj, down_proj, lm_head, "" (q/k/gate shapes)
  std::string isa;     ///< the backend's ISA level
  KernelShape shape;
  TileConfig config;
  QuantType quant = QuantType::None;  ///< a quantized linear's weight format (q8_0/q4_0)
  int k = 0;                ///< accumulation length passed to tolerance()
  double max_abs_err = 0;   ///< max |got - ref|
  double max_rel_err = 0;   ///< max |got - ref| / scale (tolerance.hpp: the op's term magnitude)
  double mean_rel_l1 = 0;   ///< sum |got - ref| / sum |ref|
  double tolerance = 0;     ///< tolerance(op, dtype, k): the bound on max_rel_err
  double ratio = 0;         ///< max_rel_err / tolerance (pass: <= 1); 0 when both are 0
  bool pass = false;
  long n_checked = 0;  ///< elements compared (every output element)
};

/// Every kernel x shape `cfg` needs (prefill with m = prefill_m, decode with m = 1): the
/// linear shapes a sweep measures.
std::vector<std::pair<std::string, KernelShape>> model_kernel_shapes(const ModelConfig& cfg,
                                                                     int prefill_m);

/// Every (kernel, shape, tile config) the engine dispatches for `cfg` on `backend`, full
/// outputs, against the reference backend fed the same inputs: each linear shape as GEMM
/// at m = prefill_m and at a small odd m and as GEMV; the fused q/k/v group (with the qkv
/// bias when the model has one) and gate/up group at those m; o_proj with its bias; the
/// token embeddings as the engine reads them (the gather from the packed lm_head when tied
/// and lm_head is in the base dtype, else the embedding table's lookup, shape {m, vocab,
/// dim}); rmsnorm (and the q/k norm), rope, swiglu, add; attention prefill
/// (from position 0 and after a cached prefix) and decode at two contexts. Tolerances from
/// tolerance(op, dtype, k). Configs from `sel` (or the heuristic default). Never throws on a
/// mismatch (rows say pass=false).
/// `quant` q8_0/q4_0: the layer projections' cases (planned_quant's rule) are
/// block-quantized linears, each with the config's act (tolerance(op, F32, k, act)).
/// `quant_lm_head` q8_0/q4_0 (--quantize-lm-head; None: lm_head stays in `dtype`): the
/// lm_head cases (path "lm_head", [vocab_size, emb_dim]) are linears in that format where
/// planned_quant(LmHead, ...) says so (emb_dim a multiple of kQuantBlock), and a tied model's
/// embeddings are then the table's lookup, not a gather from the quantized lm_head.
std::vector<ValidationRow> validate_kernels(const ModelConfig& cfg, DType dtype, Backend& backend,
                                            KernelSelection* sel = nullptr, int prefill_m = 512,
                                            QuantType quant = QuantType::None,
                                            QuantType quant_lm_head = QuantType::None);
/// Same on several backends (e.g. the cpu backend at every ISA level this host runs: deploy
/// phase 1) fed the same inputs; the reference runs once per case. Rows per backend.
std::vector<ValidationRow> validate_kernels(const ModelConfig& cfg, DType dtype,
                                            std::span<Backend* const> backends,
                                            KernelSelection* sel, int prefill_m,
                                            QuantType quant = QuantType::None,
                                            QuantType quant_lm_head = QuantType::None);

/// One line per row for reports: "kernel [path] isa shape config: err e, tolerance t, ratio r".
std::string validation_row_string(const ValidationRow& r);

/// Sweeps the candidate tile configs of every linear shape of the model for the
/// prefill GEMM (`prefill` true, m = prefill_m) or the decode GEMV, records all candidates
/// and the fastest passing one in `registry` (writable) with used_by = model_name, saves.
/// Returns the recorded entries. `threads` as Backend::set_threads. A linear shape [n, k]
/// for which `keep_shape(n, k)` is false is not swept (a quantized deployment's quantized
/// projections never run the base-dtype GEMM/GEMV); empty = every shape.
/// `quant` q8_0/q4_0 (decode only; UsageError for prefill): the layer projections' GEMVs
/// on block-quantized weights, candidates act 0 / act 1, entries of dtype "q8_0"/"q4_0".
std::vector<RegistryEntry> sweep_kernels(const ModelConfig& cfg, DType dtype, bool prefill,
                                         KernelRegistry& registry, const std::string& model_name,
                                         int threads = 0, int prefill_m = 512, int reps = 3,
                                         const std::function<bool(int n, int k)>& keep_shape = {},
                                         QuantType quant = QuantType::None);

/// Records validation rows as validated entries (phase 1) with the configs used.
void record_validation(const std::vector<ValidationRow>& rows, DType dtype, const std::string& isa,
                       KernelRegistry& registry, const std::string& model_name, int threads);

}  // namespace llmport
