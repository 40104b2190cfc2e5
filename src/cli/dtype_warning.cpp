#include "cli/dtype_warning.hpp"

#include "llmport/dtype.hpp"
#include "llmport/error.hpp"

namespace llmport::cli {

std::optional<std::string> torch_dtype_warning(const std::string& torch_dtype, const std::string& config) {
  if (torch_dtype.empty()) return std::nullopt;
  try {
    (void)parse_dtype(torch_dtype);
    return std::nullopt;
  } catch (const Error&) {
    return config + ": torch_dtype \"" + torch_dtype +
           "\" is not a known dtype (bfloat16, float16, float32); without --dtype the weights' "
           "stored dtype is used";
  }
}

}  // namespace llmport::cli
