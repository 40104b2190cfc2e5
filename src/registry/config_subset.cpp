// Which tile keys of a config belong to one kernel: read from the backend's tile schema, so
// the registry never spells a backend's keys itself.
#include <map>
#include <memory>
#include <mutex>

#include "llmport/registry.hpp"

namespace llmport {

TileConfig kernel_config_subset(const std::string& kernel, const TileConfig& cfg,
                                const Backend& backend) {
  for (OpKind kind : kAllOps)
    if (op_name(kind) == kernel) return tile_subset(backend.tile_schema(kind), cfg);
  return {};
}

TileConfig kernel_config_subset(const std::string& kernel, const TileConfig& cfg,
                                const std::string& target) {
  // One backend per target for the process: its schema never changes, and creating one
  // per call would start a worker pool each time.
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Backend>> backends;
  std::lock_guard<std::mutex> lock(mu);
  auto& be = backends[target];
  if (!be) be = make_backend(target, 1);
  return kernel_config_subset(kernel, cfg, *be);
}

}  // namespace llmport
