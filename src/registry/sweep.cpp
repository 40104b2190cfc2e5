// `kernels sweep`: tries the candidate tile configs of each linear shape of a model and
// records every measurement and the fastest passing config.
#include <set>

#include <fmt/format.h>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"
#include "llmport/registry.hpp"
#include "registry/kernel_check.hpp"

namespace llmport {

std::vector<RegistryEntry> sweep_kernels(const ModelConfig& cfg, DType dtype, bool prefill,
                                         KernelRegistry& registry, const std::string& model_name,
                                         int threads, int prefill_m, int reps) {
  auto backend = make_backend("cpu", threads);
  const cpu::Isa isa = cpu::parse_isa(backend->isa());
  const std::string dt(dtype_name(dtype));
  std::vector<RegistryEntry> out;
  // Entries of this machine (fingerprint with this backend's resolved thread count).
  const MachineFingerprint here = MachineFingerprint::current(backend->threads());
  for (const auto& [kernel, shape] : model_kernel_shapes(cfg, prefill_m)) {
    if (kernel != (prefill ? "gemm" : "gemv")) continue;
    RegistryEntry e;
    if (const auto* old = registry.find(kernel, dt, backend->isa(), shape, here)) e = *old;
    e.kernel = kernel;
    e.dtype = dt;
    e.isa = backend->isa();
    e.shape = shape;
    e.candidates.clear();
    const int n = shape.at("n"), k = shape.at("k");
    // Each candidate = the heuristic default with the swept keys replaced.
    const TileConfig base = cpu::default_tile_config(isa, dtype, n, k);
    double best = -1;
    for (const TileConfig& delta : cpu::candidate_tile_configs(isa, dtype, prefill)) {
      TileConfig tc = base;
      for (const auto& [key, v] : delta) tc[key] = v;
      const auto r = detail::check_kernel(kernel, shape, dtype, *backend, tc, reps);
      Candidate c;
      c.config = kernel_config_subset(kernel, tc);
      c.gflops = r.seconds > 0 ? r.flops / r.seconds * 1e-9 : 0;
      c.gbps = r.seconds > 0 ? r.bytes / r.seconds * 1e-9 : 0;
      c.mean_rel_l1 = r.mean_rel_l1;
      c.max_abs_err = r.max_abs_err;
      c.pass = r.pass;
      e.candidates.push_back(c);
      const double thr = prefill ? c.gflops : c.gbps;
      if (c.pass && thr > best) {
        best = thr;
        e.best = c.config;
      }
    }
    if (best < 0)
      throw GateError(fmt::format("kernels sweep: no candidate config of {} {} passes the "
                                  "tolerance", kernel, shape_string(shape)));
    e.heuristic = false;
    e.validated = false;  // a new best must be validated again (phase 1 / kernels validate)
    e.used_by = {model_name};
    e.provenance = Provenance::current(backend->threads());
    registry.record(e);
    out.push_back(e);
  }
  registry.save();
  return out;
}

}  // namespace llmport
