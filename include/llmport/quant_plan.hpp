#pragma once
// Which tensors a q8_0/q4_0 deployment quantizes (the seven layer projections whose input
// dimension splits into kQuantBlock blocks; lm_head only with --quantize-lm-head), which stay
// in the base dtype, and the bytes of weights one decoded token reads: what `llmport check
// --dtype q4_0` and a deployment's ARCHITECTURE.md list.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/architecture.hpp"
#include "llmport/dtype.hpp"
#include "llmport/model_config.hpp"
#include "llmport/quant.hpp"

namespace llmport {

/// One matrix of the model as a quantized deployment holds it.
struct PlannedTensor {
  std::string name;             ///< HF name
  TensorRole role;
  std::vector<int64_t> shape;   ///< [n_out, n_in]
  QuantType quant = QuantType::None;  ///< None: kept in the base dtype
  std::string why;              ///< why it is kept ("" when quantized)
  std::size_t bytes = 0;        ///< bytes as held (blocks + scales, or base-dtype values)
};

struct QuantPlan {
  QuantType quant = QuantType::None;
  QuantType lm_head = QuantType::None;
  DType base = DType::BF16;
  std::vector<PlannedTensor> matrices;  ///< every linear weight and the embedding table
  int n_quantized = 0;
  int n_kept = 0;
  /// Bytes of weights one decode step reads (bytes/token): every linear (lm_head included)
  /// plus one embedding row; the KV cache (which grows with the context) is not included.
  std::size_t bytes_per_token = 0;
  /// The same model in the base dtype (the ratio is the decode speedup bound).
  std::size_t base_bytes_per_token = 0;
};

/// The role's block format under `quant` / `lm_head` (the rule the Engine applies): layer
/// projections (q, k, v, o, gate, up, down) take `quant`, lm_head takes `lm_head`, when the
/// input dimension is a multiple of kQuantBlock; everything else None.
QuantType planned_quant(TensorRole role, const std::vector<int64_t>& shape, QuantType quant,
                        QuantType lm_head);
/// The plan for `cfg` (tied models: lm_head is the embedding table).
QuantPlan plan_quantization(const ModelConfig& cfg, DType base, QuantType quant, QuantType lm_head);
/// Summary lines: counts, what is kept and why, bytes per token vs the base dtype.
std::string quant_plan_text(const QuantPlan& p);
nlohmann::json to_json(const QuantPlan& p);

}  // namespace llmport
