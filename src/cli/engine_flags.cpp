#include "cli/engine_flags.hpp"

#include "cli/registry_arg.hpp"
#include "llmport/error.hpp"
#include "llmport/quant.hpp"

namespace llmport::cli {

std::optional<std::string> dtype_flag(const std::string& dtype) {
  if (dtype.empty()) return std::nullopt;
  return dtype;
}

EngineOptions engine_options_from_flags(const EngineFlags& flags, const std::function<int()>& context) {
  EngineOptions opt;
  opt.backend = flags.backend;
  opt.threads = flags.threads;
  if (flags.dtype) set_dtype_flag(opt, *flags.dtype);
  if (!flags.quantize_lm_head.empty()) {
    opt.quant_lm_head = parse_quant(flags.quantize_lm_head);
    if (opt.quant_lm_head == QuantType::None)
      throw UsageError("--quantize-lm-head '" + flags.quantize_lm_head + "': expected q8_0 or q4_0");
    if (opt.quant == QuantType::None)
      throw UsageError("--quantize-lm-head needs a quantized --dtype (q8_0 or q4_0)");
  }
  if (!flags.fault.empty()) opt.fault = FaultInjection::parse(flags.fault);
  if (!flags.registry.empty()) opt.kernels = registry_selection(flags.registry, flags.backend, context());
  return opt;
}

std::optional<int> context_cap(int max_seq) {
  if (max_seq > 0) return max_seq;
  return std::nullopt;
}

int model_context(const ModelConfig& cfg) { return cfg.max_seq > 0 ? cfg.max_seq : cfg.max_position_embeddings; }

DType dtype_or_config(const std::string& dtype, const ModelConfig& cfg) {
  if (!dtype.empty()) return parse_dtype(dtype);
  return cfg.torch_dtype.empty() ? DType::BF16 : parse_dtype(cfg.torch_dtype);
}

}  // namespace llmport::cli
