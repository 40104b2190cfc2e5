// The tensor-role table: HF tensor names, roles and shapes of the tensor set a config
// implies (modeling_llama.py / modeling_qwen2.py / modeling_qwen3.py parameter names).
#include <string>

#include "llmport/architecture.hpp"
#include "llmport/weights.hpp"

namespace llmport {

namespace {

using enum TensorRole;
using enum Dim;
constexpr auto kIn = TensorScope::Input;
constexpr auto kLayer = TensorScope::Layer;
constexpr auto kOut = TensorScope::Output;

// The order is the loader's: the first missing tensor of a damaged model is named in it.
constexpr std::array<TensorRoleInfo, 18> kRoles = {{
    {Embed, "embed", "model.embed_tokens.weight", kIn, Presence::Always, 2, {VocabSize, EmbDim}},
    {AttnNorm, "attn_norm", "input_layernorm.weight", kLayer, Presence::Always, 1, {EmbDim, EmbDim}},
    {Wq, "wq", "self_attn.q_proj.weight", kLayer, Presence::Always, 2, {QDim, EmbDim}},
    {Wk, "wk", "self_attn.k_proj.weight", kLayer, Presence::Always, 2, {KvDim, EmbDim}},
    {Wv, "wv", "self_attn.v_proj.weight", kLayer, Presence::Always, 2, {KvDim, EmbDim}},
    {Wo, "wo", "self_attn.o_proj.weight", kLayer, Presence::Always, 2, {EmbDim, QDim}},
    {Bq, "bq", "self_attn.q_proj.bias", kLayer, Presence::QkvBias, 1, {QDim, QDim}},
    {Bk, "bk", "self_attn.k_proj.bias", kLayer, Presence::QkvBias, 1, {KvDim, KvDim}},
    {Bv, "bv", "self_attn.v_proj.bias", kLayer, Presence::QkvBias, 1, {KvDim, KvDim}},
    {Bo, "bo", "self_attn.o_proj.bias", kLayer, Presence::OBias, 1, {EmbDim, EmbDim}},
    {QNorm, "q_norm", "self_attn.q_norm.weight", kLayer, Presence::QkNorm, 1, {HeadDim, HeadDim}},
    {KNorm, "k_norm", "self_attn.k_norm.weight", kLayer, Presence::QkNorm, 1, {HeadDim, HeadDim}},
    {FfnNorm, "ffn_norm", "post_attention_layernorm.weight", kLayer, Presence::Always, 1, {EmbDim, EmbDim}},
    {WGate, "w_gate", "mlp.gate_proj.weight", kLayer, Presence::Always, 2, {HiddenDim, EmbDim}},
    {WUp, "w_up", "mlp.up_proj.weight", kLayer, Presence::Always, 2, {HiddenDim, EmbDim}},
    {WDown, "w_down", "mlp.down_proj.weight", kLayer, Presence::Always, 2, {EmbDim, HiddenDim}},
    {FinalNorm, "final_norm", "model.norm.weight", kOut, Presence::Always, 1, {EmbDim, EmbDim}},
    {LmHead, "lm_head", "lm_head.weight", kOut, Presence::Untied, 2, {VocabSize, EmbDim}},
}};

const TensorRoleInfo* find_role(TensorRole r) noexcept {
  for (const auto& info : kRoles)
    if (info.role == r) return &info;
  return nullptr;
}

void add_scope(std::vector<TensorSpec>& out, TensorScope scope, int layer, const ModelConfig& cfg) {
  for (const auto& info : kRoles)
    if (info.scope == scope && role_present(info.role, cfg))
      out.push_back({tensor_name(info.role, layer), info.role, scope == kLayer ? layer : -1, role_shape(info.role, cfg)});
}

}  // namespace

int64_t dim_value(Dim d, const ModelConfig& cfg) noexcept {
  switch (d) {
    case VocabSize: return cfg.vocab_size;
    case EmbDim: return cfg.emb_dim;
    case QDim: return static_cast<int64_t>(cfg.n_heads) * cfg.head_dim;
    case KvDim: return static_cast<int64_t>(cfg.n_kv_heads) * cfg.head_dim;
    case HeadDim: return cfg.head_dim;
    case HiddenDim: return cfg.hidden_dim;
  }
  return 0;
}

std::string_view dim_formula(Dim d) noexcept {
  switch (d) {
    case VocabSize: return "vocab_size";
    case EmbDim: return "emb_dim";
    case QDim: return "n_heads*head_dim";
    case KvDim: return "n_kv_heads*head_dim";
    case HeadDim: return "head_dim";
    case HiddenDim: return "hidden_dim";
  }
  return "?";
}

std::span<const TensorRoleInfo> tensor_roles() noexcept { return kRoles; }

const TensorRoleInfo& tensor_role(TensorRole role) noexcept { return *find_role(role); }

std::string_view role_name(TensorRole r) noexcept {
  const TensorRoleInfo* info = find_role(r);
  return info ? info->name : "?";
}

std::string role_shape_formula(TensorRole r) {
  const TensorRoleInfo& info = tensor_role(r);
  std::string s = "[" + std::string(dim_formula(info.dims[0]));
  if (info.rank == 2) s += ", " + std::string(dim_formula(info.dims[1]));
  return s + "]";
}

bool role_present(TensorRole r, const ModelConfig& cfg) noexcept {
  switch (tensor_role(r).presence) {
    case Presence::Always: return true;
    case Presence::QkvBias: return cfg.qkv_bias;
    case Presence::OBias: return cfg.o_bias;
    case Presence::QkNorm: return cfg.qk_norm;
    case Presence::Untied: return !cfg.tie_word_embeddings;
  }
  return false;
}

std::vector<int64_t> role_shape(TensorRole r, const ModelConfig& cfg) {
  const TensorRoleInfo& info = tensor_role(r);
  std::vector<int64_t> shape = {dim_value(info.dims[0], cfg)};
  if (info.rank == 2) shape.push_back(dim_value(info.dims[1], cfg));
  return shape;
}

std::string tensor_name(TensorRole r, int layer) {
  const TensorRoleInfo& info = tensor_role(r);
  if (info.scope != kLayer) return std::string(info.hf_name);
  return "model.layers." + std::to_string(layer) + "." + std::string(info.hf_name);
}

std::vector<TensorSpec> expected_tensors(const ModelConfig& cfg) {
  std::vector<TensorSpec> t;
  add_scope(t, kIn, -1, cfg);
  for (int il = 0; il < cfg.n_layers; ++il) add_scope(t, kLayer, il, cfg);
  add_scope(t, kOut, -1, cfg);
  return t;
}

}  // namespace llmport
