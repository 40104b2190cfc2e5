// How the engine gets its tile configs: registry lookup (exact), heuristic default when
// allowed, packed weights through the kernel cache.
#include <algorithm>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"
#include "llmport/kernel_cache.hpp"
#include "llmport/registry.hpp"

namespace llmport {

TileConfig KernelSelection::linear_config(const Backend& backend, int n, int k, DType dtype) {
  if (backend.name() != "cpu") return {};
  const std::string isa = backend.isa(), dt(dtype_name(dtype));
  TileConfig cfg = cpu::default_tile_config(cpu::parse_isa(isa), dtype, n, k);
  const KernelShape gemm{{"m", prefill_m}, {"n", n}, {"k", k}}, gemv{{"n", n}, {"k", k}};
  for (const auto& [kernel, shape] : {std::pair{"gemm", gemm}, std::pair{"gemv", gemv}}) {
    const RegistryEntry* e = registry ? registry->find(kernel, dt, isa, shape) : nullptr;
    if (e && !e->heuristic) {
      for (const auto& [key, v] : kernel_config_subset(kernel, e->best)) cfg[key] = v;
      continue;
    }
    if (!allow_heuristic) {
      if (registry) registry->lookup(kernel, dt, isa, shape);  // throws with nearest shapes
      throw UsageError("kernel registry: " + std::string(kernel) + " " + dt + " " +
                       shape_string(shape) + " is not measured and no registry is open; run "
                       "`llmport kernels sweep MODEL --registry DIR`");
    }
    const std::string what = std::string(kernel) + " " + dt + " " + shape_string(shape);
    if (std::find(heuristic_used.begin(), heuristic_used.end(), what) == heuristic_used.end())
      heuristic_used.push_back(what);
  }
  chosen["n=" + std::to_string(n) + " k=" + std::to_string(k)] = cfg;
  return cfg;
}

std::unique_ptr<LinearWeight> KernelSelection::make_linear(Backend& backend, const TensorView& w,
                                                           DType dtype) {
  TileConfig cfg;
  if (w.shape.size() == 2)
    cfg = linear_config(backend, static_cast<int>(w.shape[0]), static_cast<int>(w.shape[1]), dtype);
  if (!cache_dir) return backend.make_linear(w, dtype, cfg);
  bool hit = false;
  auto lw = KernelCache(*cache_dir).get_or_pack(backend, w, dtype, cfg, &hit);
  ++(hit ? cache_hits : cache_misses);
  return lw;
}

}  // namespace llmport
