// How the engine gets its tile configs: registry lookup (exact, entries measured on this
// machine only), the heuristic default when allowed, packed weights through the kernel cache.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "llmport/error.hpp"
#include "llmport/kernel_cache.hpp"
#include "llmport/registry.hpp"

namespace llmport {

TileConfig KernelSelection::linear_config(const Backend& backend, int n, int k, DType dtype) {
  const KernelShape gemm{{"m", prefill_m}, {"n", n}, {"k", k}}, gemv{{"n", n}, {"k", k}};
  TileConfig cfg = backend.default_tiles(OpDesc{OpKind::Gemm, dtype, gemm});
  // A backend whose linears take no tile keys (reference) has nothing to look up.
  if (backend.tile_schema(OpKind::Gemm).empty() && backend.tile_schema(OpKind::Gemv).empty()) return cfg;
  const std::string isa = backend.isa(), dt(dtype_name(dtype));
  if (!machine) machine = MachineFingerprint::current(backend.threads());
  for (const auto& [kernel, shape] : {std::pair{"gemm", gemm}, std::pair{"gemv", gemv}}) {
    const std::string what = std::string(kernel) + " " + dt + " " + shape_string(shape);
    const bool seen = std::find(heuristic_used.begin(), heuristic_used.end(), what) != heuristic_used.end() ||
                      std::find(registry_used.begin(), registry_used.end(), what) != registry_used.end();
    const RegistryEntry* e = registry ? registry->find(kernel, dt, isa, shape, *machine) : nullptr;
    if (registry && !seen) {
      // Entries another machine measured: never used (the shape is served as unmeasured).
      for (const RegistryEntry* f : registry->find_foreign(kernel, dt, isa, shape, *machine)) {
        ++foreign_skipped;
        ++foreign_machines[f->provenance.fingerprint.describe()];
      }
    }
    if (e && !e->heuristic) {
      for (const auto& [key, v] : kernel_config_subset(kernel, e->best, backend)) cfg[key] = v;
      if (!seen) registry_used.push_back(what);
      continue;
    }
    if (!allow_heuristic) {
      if (registry) registry->lookup(kernel, dt, isa, shape, *machine);  // throws with nearest shapes
      throw UsageError("kernel registry: " + std::string(kernel) + " " + dt + " " +
                       shape_string(shape) + " is not measured and no registry is open; run "
                       "`llmport kernels sweep MODEL --registry DIR`");
    }
    if (!seen) heuristic_used.push_back(what);
  }
  chosen["n=" + std::to_string(n) + " k=" + std::to_string(k)] = cfg;
  return cfg;
}

std::unique_ptr<LinearWeight> KernelSelection::make_linear(Backend& backend, const TensorView& w,
                                                           DType dtype) {
  TileConfig cfg;
  const std::size_t from_registry = registry_used.size();
  if (w.shape.size() == 2)
    cfg = linear_config(backend, static_cast<int>(w.shape[0]), static_cast<int>(w.shape[1]), dtype);
  try {
    if (!cache_dir) return backend.make_linear(w, dtype, cfg);
    CacheOutcome out;
    auto lw = KernelCache(*cache_dir).get_or_pack(backend, w, dtype, cfg, nullptr, &out);
    count(out);
    return lw;
  } catch (const UsageError& e) {
    // A refused value a registry entry gave: say which entry of which registry.
    if (registry_used.size() == from_registry || !registry) throw;
    const auto& dir = registry->writable_dir() ? *registry->writable_dir() : registry->shipped_path();
    throw UsageError("kernel registry " + dir.string() + ": the entry for " + registry_used.back() + ": " +
                     e.what());
  }
}

TileConfig KernelSelection::quantized_linear_config(const Backend& backend, int n, int k, QuantType quant) {
  const KernelShape gemv{{"n", n}, {"k", k}};
  const OpDesc op{OpKind::Gemv, DType::F32, gemv, kQuantBlock, quant};
  TileConfig cfg = backend.default_tiles(op);
  if (backend.tile_schema(OpKind::Gemv).empty()) return cfg;
  if (!machine) machine = MachineFingerprint::current(backend.threads());
  // A measured decode choice of this machine wins; otherwise the backend's default, which is
  // itself the measured per-level choice (docs/quantization.md), so it is not reported as
  // an unmeasured heuristic.
  const std::string dt(quant_name(quant));
  if (const RegistryEntry* e = registry ? registry->find("gemv", dt, backend.isa(), gemv, *machine) : nullptr;
      e && !e->heuristic) {
    for (const auto& [key, v] : kernel_config_subset("gemv", e->best, backend))
      if (key == kActTileKey) cfg[key] = v;
    registry_used.push_back("gemv " + dt + " " + shape_string(gemv));
  } else if (const std::string what = "gemv " + dt + " " + shape_string(gemv);
             std::find(quant_default_used.begin(), quant_default_used.end(), what) == quant_default_used.end()) {
    quant_default_used.push_back(what);
  }
  chosen[dt + " n=" + std::to_string(n) + " k=" + std::to_string(k)] = cfg;
  return cfg;
}

std::unique_ptr<LinearWeight> KernelSelection::make_quantized_linear(Backend& backend, const TensorView& w,
                                                                     QuantType quant, std::optional<ActQuant> act) {
  TileConfig cfg;
  if (w.shape.size() == 2)
    cfg = quantized_linear_config(backend, static_cast<int>(w.shape[0]), static_cast<int>(w.shape[1]), quant);
  if (act) cfg[kActTileKey] = static_cast<int>(*act);
  if (!cache_dir) return backend.make_quantized_linear(w, quant, cfg);
  CacheOutcome out;
  auto lw = KernelCache(*cache_dir).get_or_quantize(backend, w, quant, cfg, nullptr, &out);
  count(out);
  return lw;
}

void KernelSelection::count(const CacheOutcome& out) {
  ++(out.hit ? cache_hits : cache_misses);
  if (!out.hit && !out.written) ++cache_not_written;
}

std::string KernelSelection::foreign_line() const {
  if (foreign_skipped == 0) return "";
  std::string where;
  for (const auto& [desc, n] : foreign_machines)
    where += (where.empty() ? "" : "; ") + desc + (foreign_machines.size() > 1 ? fmt::format(" ({})", n) : "");
  return fmt::format("registry: {} entr{} skipped: measured on {}, and this machine is another ({}); heuristic "
                     "defaults serve instead; 'llmport kernels sweep MODEL --prefill --registry DIR' (then "
                     "--decode) tunes here, and --registry DIR uses what it measured",
                     foreign_skipped, foreign_skipped == 1 ? "y" : "ies", where,
                     machine ? machine->describe() : "this machine");
}

std::string KernelSelection::miss_line() const {
  if (!registry || heuristic_used.empty()) return "";
  std::string first = heuristic_used.front();
  return fmt::format("registry: {} linear shape(s) not measured on this machine ran with the heuristic "
                     "default config (first: {}); 'llmport kernels sweep MODEL --prefill --registry DIR' (then "
                     "--decode) measures them, and --registry DIR uses what it measured",
                     heuristic_used.size(), first);
}

void KernelSelection::announce() {
  if (announced) return;
  announced = true;
  for (const std::string& line : {foreign_line(), miss_line()})
    if (!line.empty()) std::cerr << line << "\n";
}

}  // namespace llmport
