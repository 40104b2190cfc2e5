// Temporary local-only resolver; replaced by the HF cache/download resolver (hub issue).
#include <filesystem>

#include "llmport/error.hpp"
#include "llmport/hub.hpp"

namespace llmport {

ResolvedModel resolve_model(const std::string& model, const ResolveOptions&) {
  namespace fs = std::filesystem;
  if (fs::exists(model)) return ResolvedModel{fs::path(model), "", "", ""};
  throw UsageError("model '" + model + "' not found: no such directory or file");
}

}  // namespace llmport
