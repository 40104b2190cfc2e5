#pragma once
// Phase-0 gate checks of a model directory, as a library function the deploy pipeline and
// `llmport check --weights` share: config accepted and resolvable, resolved fields
// consistent with the raw config.json, every weight present with the right shape.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/model_config.hpp"
#include "llmport/weights.hpp"

namespace llmport {

/// One named check: "config", "config_consistency", "weights", "weights_finite".
struct Phase0Check {
  std::string name;
  bool pass = false;
  std::string detail;  ///< one line: what was checked, or the first problem
};

/// Outcome of check_model_dir. Never throws for a bad model: failures are recorded here.
struct Phase0Report {
  bool pass = false;
  std::vector<Phase0Check> checks;   ///< in the order run; stops after a failed "config"
  std::string error;                 ///< first failure, one line naming file/field/tensor
  /// Exit code of the first failure: 2 bad input (config/weights), 3 architecture
  /// rejected, 1 consistency check failed; 0 when pass.
  int exit_code = 0;
  std::optional<ModelConfig> config;  ///< set once the config resolved
  std::vector<std::string> warnings;  ///< e.g. a tied lm_head differing from the embedding
  std::size_t n_tensors = 0;          ///< tensors the model consumes
  std::size_t total_bytes = 0;        ///< bytes of those tensors (as stored)
  /// {"pass", "exit_code", "error", "checks": [{name, pass, detail}], "warnings", ...}.
  nlohmann::json to_json() const;
  /// One line per check: "  PASS weights: ..." / "  FAIL config: ...".
  std::string to_text() const;
};

/// Compares the resolved config with the raw config.json object it came from: every field
/// the file states (num_hidden_layers, hidden_size, num_attention_heads,
/// num_key_value_heads, head_dim, intermediate_size, vocab_size, rope_theta,
/// tie_word_embeddings, rms_norm_eps, max_position_embeddings, bos/eos ids) equals the
/// resolved value; derived invariants hold (n_heads % n_kv_heads == 0, head_dim even, token
/// ids < vocab_size, max_seq <= max_position_embeddings). Returns the problems (empty: ok).
std::vector<std::string> config_consistency_problems(const ModelConfig& cfg, const nlohmann::json& raw);

/// Counts the non-finite elements (NaN, +-Inf) of a tensor (F32, BF16, F16): the
/// non_finite count of scan_tensor_values; reads every byte of the view (pages it in).
std::size_t count_non_finite(const TensorView& t) noexcept;

/// The magnitude above which a weight breaks the forward pass although it is finite:
/// sqrt(FLT_MAX) (about 1.84e19). Every residual row goes through an RMSNorm whose fp32
/// sum of squares overflows once one element exceeds sqrt(FLT_MAX); a weight w reaches the
/// residual stream as w * x with x a unit-scale activation (RMSNorm outputs have RMS 1), so
/// |w| > sqrt(FLT_MAX) overflows there (the row normalizes to 0, or NaN next to an Inf) and
/// the same bound holds for q.k products in attention. bf16 and fp32 checkpoints can hold
/// such values (up to 3.4e38); fp16 cannot.
float overflow_magnitude() noexcept;
/// fp16's largest finite value: a weight above it becomes Inf when converted (--dtype fp16).
inline constexpr float kF16Max = 65504.0f;
/// Smallest magnitude that becomes Inf in fp16: kF16Max plus half its ulp (32), since
/// round-to-nearest-even takes 65505..65519 down to 65504 and 65520 (the tie) up to Inf.
inline constexpr float kF16InfFrom = 65520.0f;

/// What scan_tensor_values found in one tensor (F32, BF16, F16; reads every byte of the view).
struct ValueScan {
  std::size_t non_finite = 0;   ///< NaN / +-Inf elements
  std::size_t overflowing = 0;  ///< finite elements with |v| > overflow_magnitude()
  std::size_t above_f16 = 0;    ///< finite elements with |v| >= kF16InfFrom (includes overflowing)
  /// First element with |v| > overflow_magnitude(), else the first >= kF16InfFrom (flat
  /// index into the tensor, its value); meaningful when overflowing or above_f16 > 0.
  std::size_t first_large_index = 0;
  float first_large_value = 0.0f;
};
ValueScan scan_tensor_values(const TensorView& t) noexcept;

/// Runs the phase-0 checks on a model directory (or its config.json path): config
/// (gate ACCEPT + full resolution, with `max_seq` as for load_model_config),
/// config_consistency, weights (WeightStore::open: every layer, every tensor, right shape,
/// nothing unconsumed), and with `scan_values` also weights_finite (no NaN/Inf and no
/// |value| > overflow_magnitude() in any consumed tensor, a bad-input failure naming file,
/// tensor, index and value, exit code kExitBadInput: damaged weights are bad input); values
/// >= kF16InfFrom only add a warning, since only --dtype
/// fp16 cannot hold them; reads all weight bytes, ~1 s per few GB). Never throws for model
/// problems; see Phase0Report.
Phase0Report check_model_dir(const std::filesystem::path& dir, std::optional<int> max_seq = std::nullopt,
                             bool scan_values = false);

}  // namespace llmport
