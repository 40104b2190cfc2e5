#include "cli/registry_arg.hpp"

#include <algorithm>
#include <filesystem>

#include "llmport/error.hpp"

namespace llmport::cli {

void check_registry_dir(const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    throw UsageError("--registry " + dir + ": not a directory (a kernel registry, e.g. <deployment>/registry)");
}

std::shared_ptr<KernelSelection> registry_selection(const std::string& dir, const std::string& backend,
                                                    int context) {
  check_registry_dir(dir);
  auto sel = std::make_shared<KernelSelection>();
  const std::string target = backend == "reference" ? "cpu" : backend;
  sel->registry = std::make_shared<KernelRegistry>(KernelRegistry::shipped_dir(target), std::filesystem::path(dir));
  sel->allow_heuristic = true;
  sel->prefill_m = context > 0 ? std::min(512, context) : 512;
  return sel;
}

}  // namespace llmport::cli
