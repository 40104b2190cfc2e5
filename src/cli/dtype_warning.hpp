#pragma once
// An unknown config.json torch_dtype ("float7") is not an error (the stored dtype still
// works), but it must never be ignored silently: check and run print this warning.
#include <optional>
#include <string>

namespace llmport::cli {

/// The warning line (without "warning: ") when `torch_dtype` is set but not a dtype that
/// parse_dtype knows; nullopt when it is empty or known. `config` names the file.
std::optional<std::string> torch_dtype_warning(const std::string& torch_dtype, const std::string& config);

}  // namespace llmport::cli
