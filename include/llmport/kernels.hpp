#pragma once
// The backend interface: every op of llmport/op.hpp, implemented by the `reference` backend
// (scalar fp32 oracle, src/kernels/reference/) and the fast `cpu` backend (src/kernels/cpu/,
// ISA-dispatched). Activations are fp32 everywhere; weights are stored in the compute dtype;
// accumulation is fp32. Everything outside src/kernels/<backend>/ (the engine, the registry,
// the op harness, `kernels validate|sweep`, deploy phase 1) talks to a backend only through
// this interface: a new backend is a folder under src/kernels/ plus a line in make_backend.
// Every op call carries an OpTag {layer, role}: decorators (fault injection, profiling,
// probes; src/runtime/) wrap a backend and act on tagged calls.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "llmport/dtype.hpp"
#include "llmport/op.hpp"
#include "llmport/quant.hpp"
#include "llmport/tensor.hpp"

namespace llmport {

/// A linear layer's weight W [n_out, n_in] (nn.Linear layout: y = x W^T), converted to
/// the compute dtype and laid out however the backend wants (packed panels for GEMM).
class LinearWeight {
 public:
  virtual ~LinearWeight() = default;
  int n_out = 0;
  int n_in = 0;
  DType dtype = DType::F32;  ///< compute dtype of the stored values (activations it meets)
  /// Block quantization of the stored values (None: plain `dtype` values).
  QuantType quant = QuantType::None;
  TileConfig config;         ///< config it was packed for
  /// Bytes held by this weight in the backend's memory.
  virtual std::size_t bytes() const = 0;
  /// The packed bytes exactly as the backend holds them, for the kernel cache to store
  /// (Backend::linear_from_packed reads them back); empty = this weight is not cacheable.
  virtual std::span<const std::byte> packed() const { return {}; }
};

/// One linear of a group that shares its input x (q/k/v, gate/up): y[m, w->n_out] =
/// x[m, w->n_in] . W^T (+ bias[w->n_out] when non-null). fp32 y, fp32 bias.
struct LinearCall {
  const LinearWeight* w = nullptr;
  float* y = nullptr;
  const float* bias = nullptr;
  OpRole role = OpRole::None;  ///< which projection (Q, K, V, ...), for decorators
};

/// One sequence's attention: m new query rows at positions start_pos..start_pos+m-1 against
/// its KV-cache region, which already holds positions 0..start_pos+m-1. Query head h reads
/// kv head h / (n_heads / n_kv_heads) (GQA); scores = q.k * scale, causal softmax over
/// positions 0..start_pos+t in fp32 (HF eager attention).
struct AttentionArgs {
  const float* q = nullptr;        ///< [m, n_heads, head_dim]
  const float* k_cache = nullptr;  ///< [n_kv_heads, kv_capacity, head_dim]
  const float* v_cache = nullptr;  ///< [n_kv_heads, kv_capacity, head_dim]
  int kv_capacity = 0;             ///< positions per kv head in the region (its stride)
  int start_pos = 0;
  int m = 1;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  float scale = 1.0f;              ///< usually 1/sqrt(head_dim)
  float* out = nullptr;            ///< [m, n_heads, head_dim]
};

/// New K/V rows of one sequence into its KV-cache region at positions pos..pos+m-1.
struct KvStoreArgs {
  float* k_cache = nullptr;  ///< [n_kv_heads, kv_capacity, head_dim]
  float* v_cache = nullptr;  ///< [n_kv_heads, kv_capacity, head_dim]
  int kv_capacity = 0;
  int pos = 0;
  int m = 1;
  int n_kv_heads = 0;
  int head_dim = 0;
  const float* k = nullptr;  ///< [m, n_kv_heads, head_dim] (the k projection's layout)
  const float* v = nullptr;  ///< [m, n_kv_heads, head_dim]
};

/// Calls per "<implementation>:<kernel>" since the last reset, the implementation being
/// the one that served the call: "reference:gemv", "cpu/avx512bf16:gemm",
/// "cpu/avx2:attention_decode" (phase-7 audit: no reference fallback).
struct DispatchCounters {
  std::map<std::string, uint64_t> calls;
  void add(const std::string& impl_kernel) { ++calls[impl_kernel]; }
};

/// The implementation part of a dispatch counter name ("cpu/avx2" of "cpu/avx2:gemm").
std::string dispatch_implementation(const std::string& counter);
/// True when any counter with a call came from the `reference` implementation (the
/// scalar oracle serving a call the engine should have run on its target).
bool any_reference_dispatch(const std::map<std::string, uint64_t>& calls);

/// One compute backend. All pointers are fp32 row-major unless stated.
class Backend {
 public:
  virtual ~Backend() = default;
  /// "reference" or "cpu" (the backends built into this binary: available_backends()).
  virtual std::string name() const = 0;
  /// Instruction set in use, e.g. "avx512bf16", "avx512", "avx2", "scalar".
  virtual std::string isa() const { return "scalar"; }
  /// Worker threads (0 = all cores).
  virtual void set_threads(int n) { (void)n; }
  /// Worker threads in use (resolved: never 0).
  virtual int threads() const { return 1; }
  /// Batch-invariant mode: while on, every row of linear() / linear_group() is computed
  /// with the reduction order an m = 1 call uses, whatever m is, so a sequence's logits do
  /// not depend on which other sequences share its batch or on how its prompt is cut into
  /// prefill chunks (`llmport serve`'s continuous batching). The cpu backend then skips the
  /// bf16 prefill GEMM with fp32 FMAs (tile config "fma": 1), whose sums differ from the
  /// vdpbf16ps GEMV's. Default off; backends whose kernels are row-independent anyway
  /// (reference) ignore it.
  virtual void set_batch_invariant(bool on) { (void)on; }
  /// The code a model whose linears are in `dtype` (F32, BF16, F16) runs on this backend,
  /// as an opaque key: two backends with equal non-empty keys, at the same thread count
  /// and with the same tile configs (default_tiles), compute bit-identical outputs, so
  /// verify's self-match counts one computation once. Empty: unknown (never merged).
  virtual std::string numerics_key(DType dtype) const {
    (void)dtype;
    return {};
  }

  /// Whether this backend (at its ISA level) runs `op` natively; ops it does not support are
  /// errors, never a silent fallback. The op harness fails a backend that claims support for
  /// a kind and yields no case.
  virtual bool supports(const OpDesc& op) const = 0;
  /// The keys this backend's kernel for `kind` understands, with ranges (empty: no tiles).
  virtual TileSchema tile_schema(OpKind kind) const {
    (void)kind;
    return {};
  }
  /// The config used when the registry has no measured one for `op` (heuristic default).
  virtual TileConfig default_tiles(const OpDesc& op) const {
    (void)op;
    return {};
  }
  /// Configs a sweep measures for `op`, each a delta applied over default_tiles(op).
  virtual std::vector<TileConfig> tile_candidates(const OpDesc& op) const {
    (void)op;
    return {};
  }
  /// Re-blocks a weight this backend made for another tile config without repacking (the
  /// packed layout must not depend on it). Throws UsageError for a config the schema rejects.
  virtual void retile(LinearWeight& w, const TileConfig& cfg) { w.config = cfg; }
  /// Bytes LinearWeight::packed() holds for W [n, k] in `dtype` (0: not cacheable).
  virtual std::size_t packed_size(int n, int k, DType dtype) const {
    (void)n, (void)k, (void)dtype;
    return 0;
  }
  /// A weight W [n, k] from bytes a weight of the same shape, dtype and config returned from
  /// packed() (the kernel cache); nullptr when this backend does not cache weights.
  virtual std::unique_ptr<LinearWeight> linear_from_packed(int n, int k, DType dtype,
                                                           const TileConfig& cfg,
                                                           std::span<const std::byte> bytes) {
    (void)n, (void)k, (void)dtype, (void)cfg, (void)bytes;
    return nullptr;
  }
  /// Same, with the bytes written by `read` straight into the weight's memory (`read` fills
  /// the whole span it is given, packed_size(n, k, dtype) bytes, and returns false when it
  /// could not: then nullptr). The kernel cache streams a file in this way, so loading a
  /// weight never holds a second copy of it. Default: a buffer, then linear_from_packed.
  virtual std::unique_ptr<LinearWeight> read_packed_linear(
      int n, int k, DType dtype, const TileConfig& cfg,
      const std::function<bool(std::span<std::byte>)>& read);

  /// Bytes LinearWeight::packed() holds for W [n, k] block-quantized to `q` (0: not
  /// cacheable), the kernel cache's size check for make_quantized_linear weights.
  virtual std::size_t quantized_packed_size(int n, int k, QuantType q) const {
    (void)n, (void)k, (void)q;
    return 0;
  }
  /// A quantized weight W [n, k] in format `q` with tile config `cfg` from bytes that a
  /// make_quantized_linear weight of the same shape and format returned from packed(),
  /// written by `read` straight into the weight's memory (as read_packed_linear). nullptr
  /// when `read` fails or this backend does not cache quantized weights.
  virtual std::unique_ptr<LinearWeight> read_quantized_linear(
      int n, int k, QuantType q, const TileConfig& cfg,
      const std::function<bool(std::span<std::byte>)>& read) {
    (void)n, (void)k, (void)q, (void)cfg, (void)read;
    return nullptr;
  }

  /// Converts `w` [n_out, n_in] (any stored dtype) to `compute` dtype and lays it out.
  /// Values are rounded once from the stored dtype to `compute` (round-to-nearest-even).
  virtual std::unique_ptr<LinearWeight> make_linear(const TensorView& w, DType compute,
                                                    const TileConfig& cfg = {}) = 0;
  /// `w` [n_out, n_in] (any stored dtype, n_in a multiple of kQuantBlock) block-quantized to
  /// `quant` along n_in (llmport/quant.hpp formats), for linear() with fp32 x. Throws
  /// UsageError when this backend has no kernels for `quant` (never a silent fallback to
  /// floats) or n_in is not a multiple of kQuantBlock; ShapeError for a tensor not 2-D.
  virtual std::unique_ptr<LinearWeight> make_quantized_linear(const TensorView& w, QuantType quant,
                                                              const TileConfig& cfg = {});
  /// y[m, n_out] = x[m, n_in] . W^T (+ bias[n_out] when non-null). m = 1 is the decode
  /// GEMV, m > 1 the prefill GEMM. x is rounded to the weight dtype where the kernel
  /// multiplies in that dtype (bf16 dot products); accumulation is fp32.
  virtual void linear(const LinearWeight& w, const float* x, int m, float* y,
                      const float* bias = nullptr, OpTag tag = {}) = 0;
  /// Every call of `calls` on the same x [m, n_in] (all weights have the same n_in), as
  /// linear() would compute each. The q/k/v and gate/up projections of a layer: a backend
  /// may run them as one parallel region (a decode step then pays one thread wake-up
  /// instead of three). Default: linear() per call. Throws ShapeError when the weights'
  /// n_in differ.
  virtual void linear_group(std::span<const LinearCall> calls, const float* x, int m,
                            OpTag tag = {});
  /// Embedding lookup: out[t, :] = table[ids[t], :] rounded through `compute` and widened
  /// to fp32 (so every backend sees the same values). table: [vocab, dim] any dtype;
  /// ids: [m]; out: [m, dim]. Throws UsageError for an id outside [0, vocab). Default: the
  /// free function embedding_lookup().
  virtual void embedding(const TensorView& table, DType compute, const int* ids, int m,
                         float* out, OpTag tag = {});
  /// Rows of a linear weight as fp32: out[t, :] = W[rows[t], :], the stored compute-dtype
  /// values widened (exactly what embedding() gives for the same table and dtype). The
  /// embedding lookup of a model with tied embeddings reads its packed lm_head instead of
  /// keeping a second copy of a [vocab, emb_dim] table in memory. rows: [m];
  /// out: [m, n_in] fp32. Throws UsageError for a row outside [0, n_out).
  virtual void gather_rows(const LinearWeight& w, const int* rows, int m, float* out,
                           OpTag tag = {}) = 0;
  /// RMSNorm over rows: y[i,:] = x[i,:] / sqrt(mean(x[i,:]^2) + eps) * w[:]
  /// (HF LlamaRMSNorm: statistics in fp32). x, y: [m, dim]; y may alias x.
  virtual void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps,
                       OpTag tag = {}) = 0;
  /// Rotate-half RoPE in place (HF `apply_rotary_pos_emb`): for each row and pair
  /// i < head_dim/2: angle = positions[t] * inv_freq[i];
  /// (x_i, x_{i+d/2}) <- (x_i cos - x_{i+d/2} sin, x_{i+d/2} cos + x_i sin).
  /// x: [m, n_heads, head_dim]; positions: [m]; inv_freq: [head_dim/2].
  virtual void rope(float* x, int m, int n_heads, int head_dim, const int* positions,
                    const float* inv_freq, OpTag tag = {}) = 0;
  /// Stores K/V rows into a KV-cache region (KvStoreArgs). Throws UsageError when
  /// pos + m exceeds kv_capacity. Default: a copy.
  virtual void kv_store(const KvStoreArgs& a, OpTag tag = {});
  /// Causal GQA attention of one sequence (AttentionArgs).
  virtual void attention(const AttentionArgs& a, OpTag tag = {}) = 0;
  /// SwiGLU: out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + exp(-x)). out may alias.
  virtual void swiglu(const float* gate, const float* up, float* out, std::size_t n,
                      OpTag tag = {}) = 0;
  /// Residual add: x[i] += y[i].
  virtual void add(float* x, const float* y, std::size_t n, OpTag tag = {}) = 0;

  /// Streams every byte of `weights` once, as a decode step does, without the math, and
  /// returns the rate in GB/s (1e9 bytes/s): the memory-read bound of this model's own
  /// packed weights, measured in place (same pages, same threads) so `llmport bench` can
  /// interleave it with its test repetitions on a noisy machine. Best of `passes`.
  /// 0 when the backend cannot measure it (reference).
  virtual double read_bandwidth_gbps(std::span<const LinearWeight* const> weights, int passes) {
    (void)weights;
    (void)passes;
    return 0;
  }

  /// Kernel calls counted since the last reset_counters().
  virtual const DispatchCounters& counters() const { return counters_; }
  virtual void reset_counters() { counters_ = {}; }

 protected:
  DispatchCounters counters_;
};

/// Most worker threads a backend accepts: 4 x this machine's hardware threads (at least
/// 4). More only thrashes, and a typo such as `-t 100000` must be a clear error, not an
/// attempt to start 100000 threads. Backends throw UsageError above it.
int max_backend_threads();
/// A backend's set_threads(n) resolved: n, or every core for 0. Throws UsageError below 0
/// or above max_backend_threads() (the one wording of every backend).
int resolve_backend_threads(int n);

/// Backends built into this binary: {"reference", "cpu"} (deploy targets: those but the
/// reference oracle). There is no CUDA and no NPU backend.
std::vector<std::string> available_backends();
/// Why a known target that is not built in cannot be used, "" for any other name:
/// "cuda" -> "no CUDA backend exists yet in llmport (built-in targets: cpu)";
/// "npu1", "npu2" -> "NPU targets are out of llmport's scope (no XRT backend)".
std::string missing_target_message(const std::string& name);
/// Creates a backend by name; throws UsageError with missing_target_message, or naming the
/// available ones, otherwise.
std::unique_ptr<Backend> make_backend(const std::string& name, int threads = 0);
/// Implementation levels of backend `name` this machine can run, best first: cpu
/// {"avx512bf16", "avx512", "avx2", "scalar"} as supported; reference {"scalar"}. Deploy
/// phase 1 and `kernels validate --all-isas` check every one. Throws UsageError for an
/// unknown backend.
std::vector<std::string> backend_levels(const std::string& name);
/// Implementation levels compiled into this build of backend `name`, best first, whether
/// or not this machine runs them: cpu {"avx512bf16", "avx512", "avx2", "scalar"} (each
/// level's kernel table; run-time dispatch picks the best supported one); reference
/// {"scalar"}. Throws UsageError for an unknown backend.
std::vector<std::string> backend_built_levels(const std::string& name);
/// make_backend at a forced level (one of backend_levels(name)). Throws UsageError naming
/// the level when this machine cannot run it or the backend has no such level. Levels no
/// engine computes, only verify: cpu "rounding-noise/N|quantizer|off" (a format's cost,
/// kernels/rounding_noise.hpp), reference "fp64" (the oracle's formulas with fp64 sums and
/// intermediates, each op's output rounded to fp32 once: the copy-direction check's F).
std::unique_ptr<Backend> make_backend_at(const std::string& name, const std::string& level,
                                         int threads = 0);

/// Throws UsageError naming the first id of ids[0, m) outside the vocabulary [0, vocab).
void check_token_ids(const int* ids, int m, int64_t vocab);

/// Embedding lookup: out[t, :] = table[ids[t], :] converted to fp32 after rounding through
/// `compute` (so every backend sees the same values). table: [vocab, dim] any dtype.
/// Throws UsageError for an id outside [0, vocab).
void embedding_lookup(const TensorView& table, DType compute, const int* ids, int m, float* out);

/// Softmax in place over n values (max-subtracted, fp32).
void softmax(float* x, std::size_t n);

}  // namespace llmport
