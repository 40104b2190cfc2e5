// Names of the op layer (llmport/op.hpp) and tile-schema checks.
#include "llmport/op.hpp"

#include <string>

#include "llmport/error.hpp"

namespace llmport {

std::string_view op_name(OpKind k) noexcept {
  switch (k) {
    case OpKind::Embedding: return "embedding";
    case OpKind::GatherRows: return "gather_rows";
    case OpKind::RmsNorm: return "rmsnorm";
    case OpKind::Gemm: return "gemm";
    case OpKind::Gemv: return "gemv";
    case OpKind::LinearGroup: return "linear_group";
    case OpKind::Rope: return "rope";
    case OpKind::KvStore: return "kv_store";
    case OpKind::AttentionPrefill: return "attention_prefill";
    case OpKind::AttentionDecode: return "attention_decode";
    case OpKind::Swiglu: return "swiglu";
    case OpKind::Add: return "add";
  }
  return "?";
}

OpKind parse_op_kind(std::string_view name) {
  for (OpKind k : kAllOps)
    if (op_name(k) == name) return k;
  if (name.rfind("linear_group", 0) == 0) return OpKind::LinearGroup;
  std::string list;
  for (OpKind k : kAllOps) list += (list.empty() ? "" : ", ") + std::string(op_name(k));
  throw UsageError("unknown op '" + std::string(name) + "' (expected " + list + ")");
}

std::string_view role_name(OpRole r) noexcept {
  switch (r) {
    case OpRole::None: return "none";
    case OpRole::Embedding: return "embedding";
    case OpRole::AttnNorm: return "attn_norm";
    case OpRole::Qkv: return "qkv";
    case OpRole::Q: return "q";
    case OpRole::K: return "k";
    case OpRole::V: return "v";
    case OpRole::Attention: return "attention";
    case OpRole::O: return "o";
    case OpRole::AttnResidual: return "attn_residual";
    case OpRole::FfnNorm: return "ffn_norm";
    case OpRole::GateUp: return "gate_up";
    case OpRole::Swiglu: return "swiglu";
    case OpRole::Down: return "down";
    case OpRole::FfnResidual: return "ffn_residual";
    case OpRole::FinalNorm: return "final_norm";
    case OpRole::LmHead: return "lm_head";
  }
  return "?";
}

TileConfig tile_subset(const TileSchema& schema, const TileConfig& cfg) {
  TileConfig out;
  for (const TileParam& p : schema)
    if (auto it = cfg.find(p.name); it != cfg.end()) out[p.name] = it->second;
  return out;
}

void check_tile_config(const TileSchema& schema, const TileConfig& cfg, std::string_view who) {
  for (const auto& [key, val] : cfg) {
    const TileParam* p = nullptr;
    for (const TileParam& q : schema)
      if (q.name == key) p = &q;
    if (!p) {
      std::string keys;
      for (const TileParam& q : schema) keys += (keys.empty() ? "" : ", ") + q.name;
      throw UsageError(std::string(who) + ": unknown parameter '" + key + "' (expected " +
                       (keys.empty() ? "none" : keys) + ")");
    }
    if (val < p->min || val > p->max)
      throw UsageError(std::string(who) + ": '" + key + "' must be in [" + std::to_string(p->min) +
                       ", " + std::to_string(p->max) + "] (" + p->meaning + ") (got " +
                       std::to_string(val) + ")");
  }
}

}  // namespace llmport
