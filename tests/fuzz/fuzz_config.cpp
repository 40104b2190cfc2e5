// Fuzz target: config.json resolution + the architecture gate (src/model). The input is a
// config.json; generation_config.json is the same document (its own parser then sees
// arbitrary objects). Expected answers: ConfigError / UnsupportedError (or another
// std::exception, which the CLI reports as one error line); anything else is a finding.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "fuzz_util.hpp"
#include "llmport/compat.hpp"
#include "llmport/model_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto j = nlohmann::json::parse(llmport::fuzz::as_text(data, size), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    auto c = llmport::check_compat(j);
    (void)llmport::check_compat(j, 64);
    if (c.accepted) {
      auto cfg = llmport::resolve_model_config(j, &j);
      if (cfg.head_dim > 0 && cfg.head_dim <= 4096) (void)llmport::rope_inv_freq(cfg);
    }
  } catch (const std::exception&) {
  }
  try {
    (void)llmport::parse_generation_config(j);
  } catch (const std::exception&) {
  }
  return 0;
}
