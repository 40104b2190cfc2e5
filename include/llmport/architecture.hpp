#pragma once
// The one architecture table, in the spirit of llama.cpp's llama-arch.cpp.
//
// Every architecture llmport accepts is one row (`Architecture`) with its deltas from the
// common decoder (RMSNorm + SwiGLU + RoPE + GQA/MHA), and every tensor that decoder reads is
// one row of the tensor-role table (`TensorRoleInfo`) with its Hugging Face name and its shape
// as a function of the resolved config. The architecture gate (check_compat), config
// resolution (resolve_model_config), the tensor-set check (WeightStore::open,
// check_model_dir), `llmport synth` and the support table of docs/architecture-table.md all
// read these tables: adding an architecture variant is one row here plus tests
// (docs/architecture-table.md says how).
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llmport/model_config.hpp"

namespace llmport {

// ---------------------------------------------------------------------------------------
// Architecture rows
// ---------------------------------------------------------------------------------------

/// Whether an attention bias exists, as a function of config.json's `attention_bias`.
enum class BiasRule {
  Never,          ///< the class never has it (Mistral; Qwen2's o_proj)
  Always,         ///< present whatever attention_bias says (Qwen2's q/k/v)
  AttentionBias,  ///< present when attention_bias is true; absent key = false (Llama, Qwen3)
};

/// One accepted architecture: a Hugging Face class and its deltas from the common decoder.
/// Rows are compile-time data; every field is read by the gate, resolution, the tensor table
/// and synth, never re-derived from the class name elsewhere.
struct Architecture {
  std::string_view hf_class;    ///< architectures[0] in config.json, e.g. "Qwen2ForCausalLM"
  std::string_view model_type;  ///< model_type that implies hf_class when "architectures" is absent
  std::string_view family;      ///< name in docs and the README, e.g. "Qwen2"
  std::string_view scope_note;  ///< its distinguishing delta in a few words ("" for the base, Llama)
  BiasRule qkv_bias;            ///< q/k/v projection biases [n_heads*head_dim], [n_kv_heads*head_dim]
  BiasRule o_bias;              ///< o_proj bias [emb_dim]
  bool qk_norm;                 ///< per-head RMSNorm (weight [head_dim]) on q and k before RoPE
  /// tie_word_embeddings when config.json omits it; tied = no lm_head, logits from the embedding.
  bool tie_word_embeddings_default;
  /// rope_scaling types accepted ("none" = absent or "default"); anything else is the gate's
  /// unsupported_rope_scaling. Only types resolve_model_config can parse may be listed.
  std::span<const std::string_view> rope_types;
  /// Sliding window (tokens) when config.json has neither sliding_window nor
  /// sliding_window_size (transformers' config-class default; MistralConfig: 4096). An
  /// effective window is rejected unless --max-seq <= the window (then it equals full attention).
  std::optional<int> default_sliding_window;
  /// use_sliding_window when config.json omits it (Qwen2Config/Qwen3Config: false, so their
  /// sliding_window is then ignored); nullopt: the class has no such flag and sliding_window
  /// alone decides (expected.json's rule for configs without the flag).
  std::optional<bool> use_sliding_window_default;
  /// The class's MLP reads config.json's mlp_bias (LlamaMLP: bias on gate/up/down). The
  /// engine's SwiGLU has no biases, so mlp_bias true is rejected; the other rows' MLPs never
  /// have a bias and transformers ignores the key there.
  bool reads_mlp_bias;
  int default_max_position_embeddings;  ///< when config.json omits max_position_embeddings
  double default_rope_theta;             ///< when config.json omits rope_theta
  std::string_view hidden_act;          ///< the only accepted hidden_act (SwiGLU's gate activation)
};

/// Every accepted architecture, in the order the gate lists them.
std::span<const Architecture> architectures() noexcept;

/// The row of an HF class name (exact, case-sensitive); nullptr when not accepted.
const Architecture* find_architecture(std::string_view hf_class) noexcept;

/// The row whose model_type is `model_type` (transformers' auto mapping, used when a
/// config.json has no "architectures"); nullptr when none.
const Architecture* architecture_for_model_type(std::string_view model_type) noexcept;

/// "LlamaForCausalLM, MistralForCausalLM, ...": the accepted classes, for messages.
std::string accepted_architecture_list();

/// True when the row accepts RoPE scaling `rope_type` (normalized: "none" for absent/default).
bool rope_type_allowed(const Architecture& arch, std::string_view rope_type) noexcept;

/// "none, linear, llama3": the row's accepted RoPE scaling types, for messages.
std::string rope_type_list(const Architecture& arch);

/// Whether a bias under `rule` exists given config.json's attention_bias (false when absent).
constexpr bool bias_present(BiasRule rule, bool attention_bias) noexcept {
  return rule == BiasRule::Always || (rule == BiasRule::AttentionBias && attention_bias);
}

/// The attention deltas a row implies for one config.json.
struct AttentionDeltas {
  bool qkv_bias = false;
  bool o_bias = false;
  bool qk_norm = false;
};
AttentionDeltas attention_deltas(const Architecture& arch, bool attention_bias) noexcept;

/// The one head_dim rule beyond positivity: RoPE rotates pairs of dimensions, so head_dim
/// must be even and > 0. Returns the one-line problem ("head_dim 7 is odd: RoPE rotates
/// pairs of dimensions"), or nullopt when head_dim is usable.
std::optional<std::string> head_dim_problem(long long head_dim);

/// "Llama, Mistral (without an effective sliding window), Qwen2 (QKV bias), Qwen3 (q/k
/// norm)": the scope sentence of the README, generated from the rows.
std::string supported_families_sentence();

/// The markdown support table of docs/architecture-table.md (one line per row, header
/// included, each line ending in '\n'); a test keeps the doc equal to it.
std::string support_table_markdown();

// ---------------------------------------------------------------------------------------
// Tensor roles
// ---------------------------------------------------------------------------------------

/// What a tensor is for. The loader, probes, synth and error messages address tensors by role.
enum class TensorRole {
  Embed, AttnNorm, Wq, Wk, Wv, Wo, Bq, Bk, Bv, QNorm, KNorm, FfnNorm, WGate, WUp, WDown,
  FinalNorm, LmHead,
  Bo,  ///< o_proj bias [emb_dim], only when cfg.o_bias (Llama/Qwen3 attention_bias)
};

/// A length of the resolved config that tensor shapes are made of.
enum class Dim {
  VocabSize,  ///< cfg.vocab_size
  EmbDim,     ///< cfg.emb_dim (hidden_size)
  QDim,       ///< cfg.n_heads * cfg.head_dim
  KvDim,      ///< cfg.n_kv_heads * cfg.head_dim
  HeadDim,    ///< cfg.head_dim
  HiddenDim,  ///< cfg.hidden_dim (intermediate_size)
};

/// The value of `d` for a resolved config (64-bit: products of two ints).
int64_t dim_value(Dim d, const ModelConfig& cfg) noexcept;
/// The formula of `d` in error messages: "vocab_size", "n_heads*head_dim", ...
std::string_view dim_formula(Dim d) noexcept;

/// When a role's tensor is part of a model, as a function of the resolved config.
enum class Presence {
  Always,
  QkvBias,  ///< cfg.qkv_bias (the row's qkv_bias rule)
  OBias,    ///< cfg.o_bias (the row's o_bias rule)
  QkNorm,   ///< cfg.qk_norm (the row's qk_norm)
  Untied,   ///< !cfg.tie_word_embeddings (a tied model reads the embedding instead)
};

/// Where a role sits in the model: before the layers, in every layer, after the layers.
enum class TensorScope { Input, Layer, Output };

/// One row of the tensor-role table.
struct TensorRoleInfo {
  TensorRole role;
  std::string_view name;     ///< short name in probes and reports ("wq", "attn_norm", ...)
  std::string_view hf_name;  ///< HF parameter name; Layer roles are prefixed "model.layers.<i>."
  TensorScope scope;
  Presence presence;
  int rank;                  ///< 1 or 2
  std::array<Dim, 2> dims;   ///< shape [dims[0]] (rank 1; dims[1] unused) or [dims[0], dims[1]], row-major
};

/// Every role in the order of expected_tensors: Input roles, each layer's roles, Output roles.
std::span<const TensorRoleInfo> tensor_roles() noexcept;
/// The table row of `role` (every enumerator has one).
const TensorRoleInfo& tensor_role(TensorRole role) noexcept;
/// Short role name used by probes and reports ("wq", "attn_norm", ...); "?" for an invalid value.
std::string_view role_name(TensorRole r) noexcept;
/// The shape formula in error messages: "[n_heads*head_dim, emb_dim]".
std::string role_shape_formula(TensorRole r);
/// Whether `cfg` has a tensor of this role.
bool role_present(TensorRole r, const ModelConfig& cfg) noexcept;
/// Its shape for `cfg` (int64 lengths, row-major).
std::vector<int64_t> role_shape(TensorRole r, const ModelConfig& cfg);
/// Its HF name: "model.layers.<layer>.self_attn.q_proj.weight" for Layer roles, the bare
/// name for Input/Output roles (`layer` ignored).
std::string tensor_name(TensorRole r, int layer);

/// One expected tensor: HF name, role, layer index (-1 for global), expected shape.
struct TensorSpec {
  std::string name;  ///< e.g. "model.layers.3.self_attn.q_proj.weight"
  TensorRole role;
  int layer = -1;
  std::vector<int64_t> shape;
};

/// The tensor set a resolved config implies, in tensor_roles() order per layer (lm_head
/// omitted when tied; biases and q/k norms only when the config has them).
std::vector<TensorSpec> expected_tensors(const ModelConfig& cfg);

}  // namespace llmport
