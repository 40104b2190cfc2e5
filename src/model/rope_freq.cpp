// RoPE inverse frequencies after rope_scaling, as transformers' modeling_rope_utils.py
// computes them (_compute_default_rope_parameters, _compute_linear_scaling_rope_parameters,
// _compute_llama3_parameters).
#include <cmath>
#include <numbers>

#include "llmport/architecture.hpp"
#include "llmport/error.hpp"
#include "llmport/model_config.hpp"

namespace llmport {

std::vector<float> rope_inv_freq(const ModelConfig& cfg) {
  const int d = cfg.head_dim;
  if (auto problem = head_dim_problem(d)) throw ConfigError("rope_inv_freq: " + *problem);
  const RopeScaling& rs = cfg.rope_scaling;
  std::vector<float> out(static_cast<std::size_t>(d / 2));  // [head_dim/2]
  for (int i = 0; i < d / 2; ++i) {
    // inv_freq[i] = 1 / theta^(2i/d)
    double f = 1.0 / std::pow(cfg.rope_theta, static_cast<double>(2 * i) / d);
    if (rs.type == "linear") {
      f /= rs.factor;
    } else if (rs.type == "llama3") {
      const double old_ctx = rs.original_max_position_embeddings;
      const double low_freq_wavelen = old_ctx / rs.low_freq_factor;
      const double high_freq_wavelen = old_ctx / rs.high_freq_factor;
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen > low_freq_wavelen) {
        f /= rs.factor;  // long wavelengths: interpolate fully
      } else if (wavelen >= high_freq_wavelen) {
        // medium band: blend between scaled and unscaled
        const double smooth = (old_ctx / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
        f = (1.0 - smooth) * f / rs.factor + smooth * f;
      }
    } else if (rs.type != "none") {
      throw UnsupportedError("rope_scaling type '" + rs.type + "' is not supported (none, linear, llama3)");
    }
    out[static_cast<std::size_t>(i)] = static_cast<float>(f);
  }
  return out;
}

}  // namespace llmport
