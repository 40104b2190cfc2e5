#pragma once
// The one op harness (in the style of llama.cpp's tests/test-backend-ops.cpp): an OpCase
// names one op call (kind, weight dtype, shape, tile config, bias, seed); the harness makes
// its inputs, runs it on a backend and on the `reference` backend, and compares every output
// element (or, for a sweep, every element of up to `ref_rows` rows) under
//
//     |got_i - ref_i| <= tolerance(kind, dtype, k) * scale_i      (llmport/tolerance.hpp)
//
// with the op's per-element scale (the magnitude of the terms that make up element i).
// Output buffers carry guard words on both sides: a write outside the output fails the case.
// Every caller that compares a backend with the reference goes through it: `kernels
// validate` and deploy phase 1 (validate_kernels: the model's case list on each backend),
// `kernels sweep` (one case per tile candidate, timed), and the backends' unit tests.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "llmport/kernels.hpp"
#include "llmport/op.hpp"
#include "llmport/tolerance.hpp"

namespace llmport {

/// One op call to check. The shape keys per kind (OpShape, op.hpp):
///   gemm {m, n, k}; gemv {n, k}; linear_group {m, k, n0, n1, ...};
///   gather_rows {m, n, k} (m rows of a W [n, k]); embedding {m, vocab, dim};
///   rmsnorm {m, dim}; rope {m, n_heads, head_dim, pos0} (positions pos0..pos0+m-1);
///   swiglu / add {n};
///   attention_prefill {m, ctx, n_heads, n_kv_heads, head_dim} (queries at ctx-m..ctx-1);
///   attention_decode {ctx, n_heads, n_kv_heads, head_dim} (m = 1);
///   kv_store {m, pos0, n_kv_heads, head_dim} (rows pos0..pos0+m-1 of a pos0+m region).
/// Missing keys throw UsageError from OpHarness::run.
struct OpCase {
  OpCase() = default;
  OpCase(OpKind k, DType dt, OpShape s = {}) : kind(k), dtype(dt), shape(std::move(s)) {}

  OpKind kind = OpKind::Gemm;
  DType dtype = DType::F32;  ///< weight (compute) dtype; inputs are rounded to it where the
                             ///< backend multiplies in it (bf16 x, rmsnorm weight)
  /// Linears: the weights block-quantized to this format (Backend::make_quantized_linear on
  /// both sides; dtype must then be F32). The tile config's "act" (ActQuant, op.hpp) says
  /// whether the backend quantizes x too; the harness then compares under
  /// tolerance(kind, F32, k, Q8) with scale_i = sum_b amax_b(x) sum_{t in b} |w_it| + |b_i|.
  QuantType quant = QuantType::None;
  OpShape shape;
  TileConfig tiles;          ///< linears: config to run with (empty: backend.default_tiles)
  /// linear_group: the config of weight i, as the engine packs each weight for its own
  /// shape (empty: `tiles` for every weight).
  std::vector<TileConfig> member_tiles;
  bool bias = false;         ///< linears: with a bias vector (one per weight of a group)
  std::string label;         ///< report name ("linear_group_qkv"); empty: op_name(kind)
  std::string path;          ///< the engine call it stands for ("o_proj", "lm_head", "")
  /// Seed of the inputs. Linears: weight i of a group is N(0, 1/k) from seed + i, its bias
  /// N(0, 0.5) from seed + i + 100, x N(0, 1) from 1000 + 7 m + k (so a group and its
  /// members share weights, x and reference outputs). Others: see make_inputs.
  uint32_t seed = 1;
  /// Linears: compare only this many rows spread evenly over m (the reference on a few rows
  /// is what keeps a sweep of many configs fast); 0 = every row.
  int ref_rows = 0;
  float eps = 1e-6f;           ///< rmsnorm epsilon
  double rope_theta = 10000;   ///< rope base of inv_freq
  bool in_place = false;       ///< rmsnorm: y aliases x
};

/// The inputs of one case; make_inputs builds them from the case, tests that need specific
/// values (NaN, saturated exp, a poisoned KV tail, large rope angles) edit them.
struct OpInputs {
  std::vector<std::vector<float>> w;     ///< linears: W_i [n_i, k] fp32 (make_linear rounds);
                                         ///< gather_rows: W [n, k]; embedding: table
                                         ///< [vocab, dim]; rmsnorm: w[0] = weight [dim]
  std::vector<std::vector<float>> bias;  ///< linears with bias: b_i [n_i]
  std::vector<float> x;  ///< linear x [m, k]; rmsnorm [m, dim]; rope [m, n_heads, head_dim];
                         ///< swiglu gate / add x [n]; attention q [m, n_heads, head_dim];
                         ///< kv_store new k rows [m, n_kv_heads, head_dim]
  std::vector<float> y;  ///< swiglu up / add y [n]; kv_store new v rows
  std::vector<float> k_cache, v_cache;  ///< attention: [n_kv_heads, kv_capacity, head_dim]
  int kv_capacity = 0;                  ///< attention: positions per kv head (>= ctx)
  std::vector<int> ids;       ///< gather_rows / embedding rows [m]; rope positions [m]
  std::vector<float> inv_freq;  ///< rope [head_dim / 2]
  float attn_scale = 0;       ///< attention: 0 = 1 / sqrt(head_dim)
};

/// Outcome of one case on one backend.
struct OpResult {
  ToleranceCheck check;  ///< errors, tolerance, n_checked, pass (per element)
  long k = 0;            ///< accumulation length given to tolerance()
  TileConfig config;     ///< the tile keys of this kind the backend ran with (linears)
  bool guards_intact = true;  ///< no write outside the output buffers
  double seconds = 0;  ///< best of `reps` timed calls (0 when reps == 0)
  double flops = 0;    ///< FLOPs of one call (linears; 0 otherwise)
  double bytes = 0;    ///< bytes one call must move (linears: packed weight + x + y)
  /// Passes when every compared element is within tolerance, something was compared and no
  /// guard word changed: a case that checks nothing fails.
  bool pass() const { return check.pass && check.n_checked > 0 && guards_intact; }
};

/// The op a case runs, as a backend's supports() sees it (m = 1 and ctx for decode).
OpDesc op_desc(const OpCase& c);
/// "label [path] shape config: max err/scale e, tolerance t (k=..), ratio r, first bad i,
/// n elements" for failure messages.
std::string describe(const OpCase& c, const OpResult& r);

/// Runs cases on backends against the reference backend it owns. Inputs, reference
/// outputs and each backend's packed weights are kept per case (per weight for linears)
/// until clear(): validating one model on several backends runs the reference once per
/// case, and a sweep packs each weight once and re-tiles it per candidate config
/// (Backend::retile). Backends are told apart by address: clear() before a backend that
/// replaces a destroyed one. Not thread-safe.
class OpHarness {
 public:
  OpHarness();
  ~OpHarness();
  OpHarness(const OpHarness&) = delete;
  OpHarness& operator=(const OpHarness&) = delete;

  /// The case on `be` vs the reference, with the default inputs (kept), and `reps` timed
  /// calls after it. Never throws on a mismatch (the result says); throws UsageError for a
  /// malformed case and whatever the backend throws (e.g. a tile config it rejects).
  OpResult run(Backend& be, const OpCase& c, int reps = 0);
  /// Same with explicit inputs (tests): only the reference output of an op other than the
  /// linears and gather_rows is kept, keyed by the case and a hash of the inputs' bytes.
  OpResult run(Backend& be, const OpCase& c, const OpInputs& in, int reps = 0);
  /// The default inputs of a case (deterministic in the case's seed and shape).
  static OpInputs make_inputs(const OpCase& c);
  /// Drops every kept input, reference output and packed weight.
  void clear();

  struct Memo;

 private:
  std::unique_ptr<Backend> ref_;
  std::unique_ptr<Memo> memo_;
};

/// The kinds of `needed` that `be` supports in `dtype` (Backend::supports) but no case of
/// `cases` covers: a backend that claims an op the model needs and yields no case fails.
std::vector<OpKind> uncovered_kinds(const Backend& be, std::span<const OpCase> cases,
                                    std::span<const OpKind> needed, DType dtype);
/// The same for a model whose linears are block-quantized to `quant`: also each of gemm and
/// gemv that `be` supports on `quant` weights (op_desc of a quantized case) with no case of
/// that format. `quant` None: the overload above.
std::vector<OpKind> uncovered_kinds(const Backend& be, std::span<const OpCase> cases,
                                    std::span<const OpKind> needed, DType dtype, QuantType quant);

/// Results of a case list on one backend, plus one failing result (nothing checked) per
/// uncovered kind (uncovered_kinds).
struct OpRun {
  const OpCase* c = nullptr;  ///< nullptr for a missing-kind result
  OpKind kind = OpKind::Gemm;
  OpResult result;
};
std::vector<OpRun> run_cases(OpHarness& h, Backend& be, std::span<const OpCase> cases,
                             std::span<const OpKind> needed, DType dtype);

}  // namespace llmport
