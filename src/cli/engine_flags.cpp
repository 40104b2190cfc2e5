#include "cli/engine_flags.hpp"

#include "cli/registry_arg.hpp"

namespace llmport::cli {

std::optional<std::string> dtype_flag(const std::string& dtype) {
  if (dtype.empty()) return std::nullopt;
  return dtype;
}

EngineOptions engine_options_from_flags(const EngineFlags& flags, const std::function<int()>& context) {
  EngineOptions opt;
  opt.backend = flags.backend;
  opt.threads = flags.threads;
  if (flags.dtype && flags.quantized_ok) set_dtype_flag(opt, *flags.dtype);
  else if (flags.dtype) opt.dtype = parse_dtype(*flags.dtype);
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
