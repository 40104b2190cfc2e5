#pragma once
// The engine: one data-driven decoder forward pass for every in-scope architecture
// (HF modeling_llama.py / modeling_qwen2.py / modeling_qwen3.py semantics), prefill over
// many tokens at once and decode from a preallocated KV cache.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llmport/kernels.hpp"
#include "llmport/model_config.hpp"
#include "llmport/weights.hpp"

namespace llmport {

struct KernelSelection;  // llmport/registry.hpp

/// Test-only faults planted into one layer (or globally) to prove the gates catch them.
struct FaultInjection {
  enum class Kind {
    None,
    RopeInterleaved,  ///< RoPE on (2i, 2i+1) pairs instead of rotate-half
    DropQkvBias,      ///< skip the q/k/v bias add
    SkipQkNorm,       ///< skip Qwen3 per-head q/k RMSNorm
    WrongRopeTheta,   ///< rope_theta multiplied by `value` (default 2)
    KvOffByOne,       ///< decode writes K/V one position late
    LogitScale,       ///< logits multiplied by `value` (default 1.25)
    /// The layer's o_proj output multiplied by `value` (default 2), bias excluded: exactly
    /// what a x`value` error in every block scale of a quantized o_proj does, since a
    /// quantized row's dot product is sum_b d_b (q_b . x_b) (llmport/quant.hpp).
    ProjScale,
  };
  Kind kind = Kind::None;
  /// Layer the fault applies to (RopeInterleaved, DropQkvBias, SkipQkNorm, WrongRopeTheta,
  /// ProjScale);
  /// KvOffByOne (every layer, decode steps only) and LogitScale are global.
  int layer = 0;
  double value = 0.0;  ///< kind-specific parameter (0 = default)
  /// The spec it was parsed from ("" for none): what reports record as the planted fault.
  std::string spec;
  /// Parses "kind[@layer][=value]", kinds: rope_interleaved, drop_qkv_bias, skip_qk_norm,
  /// wrong_rope_theta, kv_off_by_one, logit_scale, proj_scale; value a positive number in
  /// float's normal range (1.17549e-38 to 3.40282e+38). Throws UsageError naming the spec
  /// and what is wrong (unknown kind, bad layer, value not positive or out of range).
  static FaultInjection parse(const std::string& spec);
};

/// Engine construction options.
struct EngineOptions {
  std::string backend = "cpu";      ///< "reference" | "cpu"
  /// Implementation level of `backend` (one of backend_levels(backend): cpu "avx512bf16",
  /// "avx512", "avx2", "scalar"); empty = make_backend's choice (the best this machine runs,
  /// or LLMPORT_CPU_ISA). A level this machine cannot run is a UsageError.
  std::string backend_level;
  std::optional<DType> dtype;       ///< compute dtype of weights; default: checkpoint dtype
  int threads = 0;                  ///< 0 = all cores
  /// KV-cache capacity in tokens; 0 = min(cfg.max_seq, kDefaultMaxSeq). Larger than
  /// cfg.max_seq is a UsageError.
  int max_seq = 0;
  FaultInjection fault;             ///< test-only
  /// Tile configs from the kernel registry (and the packed-weight kernel cache) for the
  /// cpu backend's linears; null = the backend's heuristic defaults, no cache
  /// (llmport/registry.hpp). Records which shapes used a heuristic config.
  std::shared_ptr<KernelSelection> kernels;
  /// Sequence slots: independent KV-cache regions of max_seq tokens each (>= 1). Slot 0 is
  /// the one forward() / prefill() / decode_step() use; forward_batch() runs several.
  int n_slots = 1;
  /// Backend::set_batch_invariant: a sequence's logits do not depend on its batch
  /// neighbours or on how its prompt is cut into prefill chunks (`llmport serve`).
  bool batch_invariant = false;
  /// Weight-only block quantization of the seven linear projections of every layer (q, k,
  /// v, o, gate, up, down) whose input dimension is a multiple of kQuantBlock; the others,
  /// embeddings, norms, biases and lm_head stay in `dtype` (llmport/quant.hpp).
  QuantType quant = QuantType::None;
  /// Quantization of lm_head too (`--quantize-lm-head`); None keeps it in `dtype`.
  QuantType quant_lm_head = QuantType::None;
  /// The activations of every quantized linear (tile key "act", llmport/op.hpp) instead of
  /// the registry's / backend's choice: F32 is weight-only quantization (the independent
  /// reference's KLD figures), Q8 the int8 dot products. Unset: the selected config's.
  std::optional<ActQuant> quant_act;
  /// The activations of the quantized linear of each named tensor, over quant_act: how an
  /// oracle mirrors an engine's per-shape choice (Engine::quant_acts(); make_oracle_runner).
  std::map<std::string, ActQuant> quant_act_of_tensor;
  /// KV-cache capacity used when max_seq is 0 (bounds memory for 128k-context models).
  static constexpr int kDefaultMaxSeq = 4096;
};

/// Applies a `--dtype` value: bf16|fp16|fp32 (and their spellings) set opt.dtype;
/// q8_0|q4_0 set opt.quant and leave opt.dtype (the base dtype of the unquantized tensors:
/// the checkpoint's). Throws UsageError naming the value otherwise.
void set_dtype_flag(EngineOptions& opt, std::string_view value);
/// The name of what an engine runs: "q8_0" / "q4_0" when quantized, else dtype_name(dtype).
std::string precision_name(DType dtype, QuantType quant);

/// The checkpoint's dtype: config torch_dtype when set, else the dominant stored dtype. This
/// is the engine's dtype without --dtype, and the base dtype of a q8_0/q4_0 engine's
/// unquantized tensors.
DType checkpoint_dtype(const ModelConfig& cfg, const WeightStore& weights);
/// The same rule for a model directory whose weights are not open (its safetensors headers
/// are read when torch_dtype is absent or unusual); `if_unreadable` when they do not open
/// (a bare config.json, or a store that phase 0 reports as damaged). Throws nothing of its own.
DType checkpoint_dtype(const ModelConfig& cfg, const std::filesystem::path& model_dir, DType if_unreadable);

/// Probe callback: `name` in {"embedding", "attn_norm", "q", "k", "v", "attn_out",
/// "ffn_norm", "ffn_out", "layer_out", "final_norm"}, `layer` (-1 for global), data
/// [n_tokens, dim] fp32. Called only when set, so the normal path pays one branch.
/// q and k are reported after bias, q/k norm and RoPE (what attention consumes), dims
/// n_heads*head_dim and n_kv_heads*head_dim; attn_out and ffn_out are the o_proj and
/// down_proj outputs (before the residual add); layer_out is the residual stream after
/// layer `layer` (HF hidden_states[layer + 1]); final_norm covers every position.
using ProbeFn = std::function<void(std::string_view name, int layer, const float* data,
                                   int n_tokens, int dim)>;

/// Per-op wall time, accumulated while profiling is enabled.
struct OpProfile {
  std::string op;
  double ms = 0;
  uint64_t calls = 0;
};

/// One sequence's part of a batched forward (Engine::forward_batch).
struct BatchItem {
  int slot = 0;                 ///< KV-cache slot [0, n_slots)
  std::span<const int> tokens;  ///< >= 1 tokens, run at positions slot_pos(slot)..+n-1
};

/// One model instance with its KV cache ([n_layers, n_kv_heads, max_seq, head_dim] per
/// slot, fp32, preallocated; no per-token allocation).
class Engine {
 public:
  Engine(const ModelConfig& cfg, const WeightStore& weights, const EngineOptions& opt = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Runs `tokens` at positions pos()..pos()+n-1, appending to the KV cache.
  /// Returns logits [vocab] of the last position, or [n, vocab] when all_logits.
  /// Throws UsageError when pos()+n exceeds the context (before any work).
  std::vector<float> forward(std::span<const int> tokens, bool all_logits = false);
  /// reset() then forward(tokens): the prefill.
  std::vector<float> prefill(std::span<const int> tokens);
  /// forward({token}): one decode step; returns logits [vocab].
  std::vector<float> decode_step(int token);
  /// Continuous batching: one forward over several sequences, each in its own slot (slots
  /// distinct). Every item's tokens are appended to its slot's KV cache at that slot's
  /// positions; the linears run once over all rows (m = total tokens: each weight is read
  /// once per step), attention runs per item at its own context. Returns the logits of each
  /// item's last token, [items, vocab] in item order. Throws UsageError (before any work)
  /// for a bad slot, a repeated slot, an empty item or one that overflows its slot.
  std::vector<float> forward_batch(std::span<const BatchItem> items);
  /// Number of sequence slots (EngineOptions::n_slots).
  int n_slots() const;
  /// Positions held in slot `slot`'s KV cache.
  int slot_pos(int slot) const;
  /// Empties slot `slot` (its position goes back to 0).
  void reset_slot(int slot);
  /// Empties the KV cache (pos() = 0).
  void reset();
  /// Drops KV entries at positions >= n.
  void truncate(int n);
  /// Number of positions in the KV cache.
  int pos() const;
  /// KV-cache capacity in tokens (of each slot).
  int max_seq() const;

  void set_probe(ProbeFn fn);
  void set_profiling(bool on);
  std::vector<OpProfile> profile() const;

  const ModelConfig& config() const;
  DType dtype() const;
  /// Quantization of the layer projections (EngineOptions::quant).
  QuantType quant() const;
  /// Quantization of lm_head (EngineOptions::quant_lm_head; None: the base dtype).
  QuantType quant_lm_head() const;
  /// The activations each block-quantized linear runs with, by tensor name (a tied
  /// lm_head under the embedding's): ActQuant::Q8 multiplies q8_0 activation blocks, F32
  /// widens the weights. Chosen per shape at load (registry, backend default,
  /// EngineOptions::quant_act). Empty for an unquantized engine.
  const std::map<std::string, ActQuant>& quant_acts() const;
  Backend& backend();
  /// Bytes of the weights as held by the backend (bytes).
  std::size_t weight_bytes() const;
  /// Bytes of the embedding table the engine looks tokens up in from the checkpoint's
  /// mapping (bytes): [vocab, emb_dim] in the stored dtype for an untied model or a
  /// quantized lm_head; 0 when a tied model gathers its embeddings from the packed lm_head.
  /// Part of the model's memory (any token may touch any row), not read per token.
  std::size_t embedding_table_bytes() const;
  /// Bytes of the KV cache, all slots (bytes).
  std::size_t kv_cache_bytes() const;
  /// GB/s at which the backend streams all of this model's linear weights (lm_head
  /// included) once, best of `passes`: the in-place memory-read bound of a decode step
  /// (Backend::read_bandwidth_gbps). 0 when the backend cannot measure it.
  double weight_read_gbps(int passes = 2);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmport
