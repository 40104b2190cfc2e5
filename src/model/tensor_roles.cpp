// The tensor-role table: HF tensor names, roles and shapes of the tensor set a config
// implies (modeling_llama.py / modeling_qwen2.py / modeling_qwen3.py parameter names).
#include <string>

#include "llmport/weights.hpp"

namespace llmport {

std::string_view role_name(TensorRole r) noexcept {
  switch (r) {
    case TensorRole::Embed: return "embed";
    case TensorRole::AttnNorm: return "attn_norm";
    case TensorRole::Wq: return "wq";
    case TensorRole::Wk: return "wk";
    case TensorRole::Wv: return "wv";
    case TensorRole::Wo: return "wo";
    case TensorRole::Bq: return "bq";
    case TensorRole::Bk: return "bk";
    case TensorRole::Bv: return "bv";
    case TensorRole::Bo: return "bo";
    case TensorRole::QNorm: return "q_norm";
    case TensorRole::KNorm: return "k_norm";
    case TensorRole::FfnNorm: return "ffn_norm";
    case TensorRole::WGate: return "w_gate";
    case TensorRole::WUp: return "w_up";
    case TensorRole::WDown: return "w_down";
    case TensorRole::FinalNorm: return "final_norm";
    case TensorRole::LmHead: return "lm_head";
  }
  return "?";
}

std::vector<TensorSpec> expected_tensors(const ModelConfig& cfg) {
  const int64_t emb = cfg.emb_dim, hd = cfg.head_dim, vocab = cfg.vocab_size, hidden = cfg.hidden_dim;
  const int64_t q_dim = static_cast<int64_t>(cfg.n_heads) * hd;      // n_heads * head_dim
  const int64_t kv_dim = static_cast<int64_t>(cfg.n_kv_heads) * hd;  // n_kv_heads * head_dim
  std::vector<TensorSpec> t;
  t.push_back({"model.embed_tokens.weight", TensorRole::Embed, -1, {vocab, emb}});
  for (int il = 0; il < cfg.n_layers; ++il) {
    const std::string p = "model.layers." + std::to_string(il) + ".";
    t.push_back({p + "input_layernorm.weight", TensorRole::AttnNorm, il, {emb}});
    t.push_back({p + "self_attn.q_proj.weight", TensorRole::Wq, il, {q_dim, emb}});
    t.push_back({p + "self_attn.k_proj.weight", TensorRole::Wk, il, {kv_dim, emb}});
    t.push_back({p + "self_attn.v_proj.weight", TensorRole::Wv, il, {kv_dim, emb}});
    t.push_back({p + "self_attn.o_proj.weight", TensorRole::Wo, il, {emb, q_dim}});
    if (cfg.qkv_bias) {
      t.push_back({p + "self_attn.q_proj.bias", TensorRole::Bq, il, {q_dim}});
      t.push_back({p + "self_attn.k_proj.bias", TensorRole::Bk, il, {kv_dim}});
      t.push_back({p + "self_attn.v_proj.bias", TensorRole::Bv, il, {kv_dim}});
    }
    if (cfg.o_bias) t.push_back({p + "self_attn.o_proj.bias", TensorRole::Bo, il, {emb}});
    if (cfg.qk_norm) {
      t.push_back({p + "self_attn.q_norm.weight", TensorRole::QNorm, il, {hd}});
      t.push_back({p + "self_attn.k_norm.weight", TensorRole::KNorm, il, {hd}});
    }
    t.push_back({p + "post_attention_layernorm.weight", TensorRole::FfnNorm, il, {emb}});
    t.push_back({p + "mlp.gate_proj.weight", TensorRole::WGate, il, {hidden, emb}});
    t.push_back({p + "mlp.up_proj.weight", TensorRole::WUp, il, {hidden, emb}});
    t.push_back({p + "mlp.down_proj.weight", TensorRole::WDown, il, {emb, hidden}});
  }
  t.push_back({"model.norm.weight", TensorRole::FinalNorm, -1, {emb}});
  if (!cfg.tie_word_embeddings) t.push_back({"lm_head.weight", TensorRole::LmHead, -1, {vocab, emb}});
  return t;
}

}  // namespace llmport
