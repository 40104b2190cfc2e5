// The quantization plan of a model (llmport/quant_plan.hpp).
#include "llmport/quant_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace llmport {
namespace {

bool is_projection(TensorRole r) {
  using enum TensorRole;
  return r == Wq || r == Wk || r == Wv || r == Wo || r == WGate || r == WUp || r == WDown;
}

std::size_t held_bytes(const std::vector<int64_t>& shape, QuantType q, DType base) {
  const auto n = static_cast<std::size_t>(shape[0]);
  return q != QuantType::None ? n * quant_row_bytes(q, shape[1])
                              : n * static_cast<std::size_t>(shape[1]) * dtype_size(base);
}

}  // namespace

QuantType planned_quant(TensorRole role, const std::vector<int64_t>& shape, QuantType quant,
                        QuantType lm_head) {
  if (shape.size() != 2 || shape[1] % kQuantBlock != 0) return QuantType::None;
  if (is_projection(role)) return quant;
  if (role == TensorRole::LmHead) return lm_head;
  return QuantType::None;
}

QuantPlan plan_quantization(const ModelConfig& cfg, DType base, QuantType quant, QuantType lm_head) {
  QuantPlan p;
  p.quant = quant;
  p.lm_head = lm_head;
  p.base = base;
  auto add = [&](std::string name, TensorRole role, std::vector<int64_t> shape) {
    PlannedTensor t{std::move(name), role, std::move(shape), QuantType::None, "", 0};
    t.quant = planned_quant(role, t.shape, quant, lm_head);
    if (t.quant == QuantType::None)
      t.why = role == TensorRole::Embed                 ? "embedding"
              : role == TensorRole::LmHead && lm_head == QuantType::None ? "lm_head (--quantize-lm-head to quantize)"
              : fmt::format("input dimension {} is not a multiple of {}", t.shape[1], kQuantBlock);
    t.bytes = held_bytes(t.shape, t.quant, base);
    const bool linear = role != TensorRole::Embed;
    const std::size_t row = static_cast<std::size_t>(t.shape[1]) * dtype_size(base);
    p.bytes_per_token += linear ? t.bytes : row;
    p.base_bytes_per_token += linear ? held_bytes(t.shape, QuantType::None, base) : row;
    if (linear) ++(t.quant != QuantType::None ? p.n_quantized : p.n_kept);
    p.matrices.push_back(std::move(t));
  };
  for (const TensorSpec& s : expected_tensors(cfg))
    if (s.shape.size() == 2) add(s.name, s.role, s.shape);
  if (cfg.tie_word_embeddings)  // lm_head is the embedding table, read once more per token
    add("lm_head (tied: model.embed_tokens.weight)", TensorRole::LmHead,
        {cfg.vocab_size, cfg.emb_dim});
  return p;
}

std::string quant_plan_text(const QuantPlan& p) {
  std::string s = fmt::format(
      "quantization {} (base {}{}): {} linear weights quantized, {} linear weights kept in {} (and the embedding "
      "table)\n",
      quant_name(p.quant), dtype_name(p.base),
      p.lm_head == QuantType::None ? "" : fmt::format(", lm_head {}", quant_name(p.lm_head)), p.n_quantized, p.n_kept,
      dtype_name(p.base));
  // One line per kind of kept tensor (the same projection of every layer reads alike), with
  // how many tensors it stands for.
  struct Kind {
    std::string key, line;
    int count = 0;
  };
  std::vector<Kind> kinds;
  for (const PlannedTensor& t : p.matrices) {
    if (t.quant != QuantType::None) continue;
    const std::string key = std::string(role_name(t.role)) + t.why;
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const Kind& k) { return k.key == key; });
    if (it == kinds.end())
      kinds.push_back({key, fmt::format("{} [{}x{}]: {}", t.name, t.shape[0], t.shape[1], t.why), 1});
    else ++it->count;
  }
  for (const Kind& k : kinds)
    s += k.count > 1 ? fmt::format("  kept: {} tensors like {}\n", k.count, k.line) : "  kept: " + k.line + "\n";
  s += fmt::format("  weights read per decoded token: {:.1f} MB ({} {:.1f} MB: {:.2f}x fewer bytes)\n",
                   p.bytes_per_token / 1e6, dtype_name(p.base), p.base_bytes_per_token / 1e6,
                   p.bytes_per_token ? static_cast<double>(p.base_bytes_per_token) / p.bytes_per_token : 0.0);
  return s;
}

nlohmann::json to_json(const QuantPlan& p) {
  nlohmann::json kept = nlohmann::json::array(), quantized = nlohmann::json::array();
  for (const PlannedTensor& t : p.matrices)
    (t.quant != QuantType::None ? quantized : kept)
        .push_back(t.quant != QuantType::None
                       ? nlohmann::json{{"name", t.name}, {"format", quant_name(t.quant)}, {"bytes", t.bytes}}
                       : nlohmann::json{{"name", t.name}, {"why", t.why}, {"bytes", t.bytes}});
  return {{"dtype", quant_name(p.quant)},          {"lm_head", quant_name(p.lm_head)},
          {"base_dtype", dtype_name(p.base)},      {"quantized", quantized},
          {"kept", kept},                          {"bytes_per_token", p.bytes_per_token},
          {"base_bytes_per_token", p.base_bytes_per_token}};
}

}  // namespace llmport
