#pragma once
// The op layer: what a backend computes, named once. Every backend call of the forward pass
// is one OpKind; its dtype and shape form an OpDesc (what the registry keys entries by, what
// a backend says it supports, what the op harness checks); its OpTag {layer, role} says where
// in the model it runs, so decorators (fault injection, profiling, probes) can find "layer 2's
// RoPE on k" without the forward pass knowing they exist. The one tolerance function
// `tolerance(op, dtype, k)` bounds every comparison against the reference backend.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "llmport/dtype.hpp"
#include "llmport/quant.hpp"

namespace llmport {

/// The ops of a decoder forward pass, as a backend implements them.
enum class OpKind {
  Embedding,         ///< rows of an embedding table, rounded through the compute dtype
  GatherRows,        ///< rows of a packed linear weight (tied embeddings)
  RmsNorm,           ///< HF LlamaRMSNorm over rows
  Gemm,              ///< linear y = x W^T (+ b) with m > 1 rows (prefill)
  Gemv,              ///< linear with m = 1 (decode)
  LinearGroup,       ///< several linears sharing x (q/k/v, gate/up)
  Rope,              ///< rotate-half RoPE in place
  KvStore,           ///< new K/V rows into a KV-cache region
  AttentionPrefill,  ///< causal GQA attention of m > 1 query rows
  AttentionDecode,   ///< attention of one query row
  Swiglu,            ///< silu(gate) * up
  Add,               ///< residual add
};

/// Every OpKind, in declaration order (tests and the harness iterate it).
inline constexpr OpKind kAllOps[] = {
    OpKind::Embedding, OpKind::GatherRows, OpKind::RmsNorm,  OpKind::Gemm,
    OpKind::Gemv,      OpKind::LinearGroup, OpKind::Rope,    OpKind::KvStore,
    OpKind::AttentionPrefill, OpKind::AttentionDecode, OpKind::Swiglu, OpKind::Add};

/// The op's name in the registry, reports and counters: "embedding", "gather_rows",
/// "rmsnorm", "gemm", "gemv", "linear_group", "rope", "kv_store", "attention_prefill",
/// "attention_decode", "swiglu", "add".
std::string_view op_name(OpKind k) noexcept;
/// Parses op_name() spellings; "linear_group_qkv" / "linear_group_gate_up" (the validation
/// rows of the two groups) are LinearGroup. Throws UsageError naming the value and the list.
OpKind parse_op_kind(std::string_view name);

/// Where a call sits in the forward pass (HF module names in comments).
enum class OpRole {
  None,          ///< not a forward-pass call (tests, the harness)
  Embedding,     ///< embed_tokens
  AttnNorm,      ///< input_layernorm
  Qkv,           ///< q_proj/k_proj/v_proj as one group
  Q, K, V,       ///< one projection (q_norm/k_norm and RoPE calls use Q and K)
  Attention,     ///< self_attn core (KV store and attention)
  O,             ///< o_proj
  AttnResidual,  ///< x += o_proj(...)
  FfnNorm,       ///< post_attention_layernorm
  GateUp,        ///< gate_proj/up_proj as one group
  Swiglu,        ///< act_fn(gate) * up
  Down,          ///< down_proj
  FfnResidual,   ///< x += down_proj(...): the layer's output
  FinalNorm,     ///< model.norm
  LmHead,        ///< lm_head (the embedding when tied)
};

/// "embedding", "attn_norm", "qkv", "q", "k", "v", "attention", "o", "attn_residual",
/// "ffn_norm", "gate_up", "swiglu", "down", "ffn_residual", "final_norm", "lm_head", "none".
std::string_view role_name(OpRole r) noexcept;

/// The place of one backend call: layer index (-1: outside the layers) and role.
struct OpTag {
  int layer = -1;
  OpRole role = OpRole::None;
};

/// Named dimensions of one op call, the registry's shape keys: gemm {m, n, k}; gemv {n, k};
/// linear_group {m, k, n0, n1, ...}; gather_rows {m, n, k}; rmsnorm {m, dim};
/// rope {m, n_heads, head_dim}; swiglu/add {n}; attention_prefill {m, n_heads, n_kv_heads,
/// head_dim}; attention_decode {ctx, n_heads, n_kv_heads, head_dim}.
using OpShape = std::map<std::string, int>;

/// One op as a backend sees it: what, in which weight dtype, at which shape.
struct OpDesc {
  OpKind kind = OpKind::Gemm;
  DType dtype = DType::F32;  ///< the weight (compute) dtype; activations are fp32
  OpShape shape;
  /// Elements per quantization block along k (0: not a block-quantized weight).
  int quant_block = 0;
  /// The block format of a quantized linear's weight (None with quant_block 0). `dtype` is
  /// then F32: the dequantized values are exact fp32 and activations stay fp32.
  QuantType quant = QuantType::None;
};



/// Tile/blocking parameters of one kernel for one shape (e.g. {"mc":64,"nc":256,"kc":256}).
/// Empty means the backend's default (Backend::default_tiles).
using TileConfig = std::map<std::string, int>;

/// The activations a quantized linear multiplies: fp32 (weights widened in registers) or
/// q8 blocks (per 32 values of each row of x: d_x = max|x| / 127 in fp32, x_q =
/// round(x / d_x) to int8, integer dot products with the weight's quants, one fp32 multiply
/// by d_w * d_x per block; ggml's q8_0 vec_dot style, with d_x kept in fp32). The value of
/// the tile-config key kActTileKey ("act") of a quantized gemv; the engine applies the
/// weight's one choice to every m (a row's result never depends on the batch it is in).
enum class ActQuant : int { F32 = 0, Q8 = 1 };
/// The tile-config key naming a quantized linear's ActQuant (0 or 1).
inline constexpr const char* kActTileKey = "act";
/// The ActQuant a tile config names (F32 when `cfg` has no "act" key).
ActQuant act_of(const TileConfig& cfg) noexcept;
/// The tile-config key of a float decode GEMV's weight prefetch hint on the cpu backend's
/// AVX-512 kernels: 0 prefetcht1 (into L2), 1 prefetchnta (non-temporal). Results do not
/// depend on it. Absent, the kernel probe's "gemv bf16" choice for this machine applies
/// (llmport/kernel_probe.hpp), else 0.
inline constexpr const char* kPrefetchTileKey = "pf";

/// One key of a kind's tile configuration: its inclusive range and what it means.
struct TileParam {
  std::string name;
  int min = 1;
  int max = 1;
  std::string meaning;
};
/// The keys a backend's kernel for one OpKind understands (Backend::tile_schema).
using TileSchema = std::vector<TileParam>;

/// The entries of `cfg` whose keys `schema` names (registry entries store only these, so a
/// gemm and a gemv entry of one weight merge into one config).
TileConfig tile_subset(const TileSchema& schema, const TileConfig& cfg);
/// Throws UsageError "<who>: unknown parameter 'x' (expected ...)" or "<who>: 'x' must be in
/// [min, max] (got v)" for the first entry of `cfg` the schema rejects.
void check_tile_config(const TileSchema& schema, const TileConfig& cfg, std::string_view who);

/// The bound on max_i |got_i - ref_i| / scale_i when a backend's `op` in `dtype` with
/// accumulation length `k` is compared with the fp32 reference fed the same inputs:
///
///     tolerance(op, dtype, k) = 2 * gamma_{k'} + 2 * e_op * u,   u = 2^-24
///
/// Higham's gamma_k = k u / (1 - k u) bounds one fp32 evaluation of a k-term sum against the
/// exact value (N. J. Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., 2002,
/// sec. 3.1); two implementations differ by at most twice it. k' = k, plus 1 for a dot
/// product whose products are not exact in fp32 (fp16/fp32 weights times fp32 x; bf16 x bf16
/// products are exact). e_op = the ulp error of an approximated function in the op (the
/// Cephes expf polynomial of swiglu and attention: ~2 ulp, counted as 4), else 0.
/// gather_rows, embedding and kv_store copy stored values: 0. docs/verification.md "Kernel
/// tolerances" lists k and scale_i per op. Never throws.
///
/// With `act` Q8 (a quantized linear on q8 activation blocks) the bound adds the activation
/// rounding: every x_t of a block b is replaced by d_x q_t with |x_t - d_x q_t| <=
/// amax_b (1/254 + 3u) (half a quantization step, plus the fp32 rounding of d_x, 1/d_x and
/// x * (1/d_x)), so the linear's error is at most
///
///     tolerance(op, F32, k, Q8) = 2 * gamma_{k'} + 1/254 + 4 u
///
/// times scale_i = sum_b amax_b sum_{t in b} |w_it| + |b_i| (>= sum_t |w_it x_t|, so the
/// fp32 summation terms stay covered; the integer block sums are exact).
double tolerance(OpKind op, DType dtype, long k, ActQuant act);
double tolerance(OpKind op, DType dtype, long k);
/// Same by name (op_name spellings, plus "linear_group_*"). Throws UsageError for an
/// unknown op.
double tolerance(const std::string& op, DType dtype, long k);

}  // namespace llmport
