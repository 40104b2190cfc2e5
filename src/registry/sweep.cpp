// `kernels sweep`: tries the backend's candidate tile configs (Backend::tile_candidates) of
// each linear shape of a model, each an op-harness case timed, and records every
// measurement and the fastest passing config.
#include <set>

#include <fmt/format.h>

#include "llmport/error.hpp"
#include "llmport/registry.hpp"
#include "registry/kernel_check.hpp"

namespace llmport {

std::vector<RegistryEntry> sweep_kernels(const ModelConfig& cfg, DType dtype, bool prefill,
                                         KernelRegistry& registry, const std::string& model_name,
                                         int threads, int prefill_m, int reps,
                                         const std::function<bool(int n, int k)>& keep_shape, QuantType quant) {
  const bool quantized = quant != QuantType::None;
  if (quantized && prefill)
    throw UsageError(std::string("kernels sweep --prefill: a ") + std::string(quant_name(quant)) +
                     " linear has no prefill keys (its one key, act, is a decode choice used for every m: "
                     "sweep --decode)");
  auto backend = make_backend("cpu", threads);
  const std::string dt = quantized ? std::string(quant_name(quant)) : std::string(dtype_name(dtype));
  if (quantized) dtype = DType::F32;  // the dequantized values; x stays fp32 or q8 by act
  std::vector<RegistryEntry> out;
  // Entries of this machine (fingerprint with this backend's resolved thread count).
  const MachineFingerprint here = MachineFingerprint::current(backend->threads());
  OpHarness harness;
  for (const auto& [kernel, shape] : model_kernel_shapes(cfg, prefill_m)) {
    if (kernel != (prefill ? "gemm" : "gemv")) continue;
    if (keep_shape && !keep_shape(shape.at("n"), shape.at("k"))) continue;
    // Quantized: the layer projections' shapes (lm_head, [vocab, emb], stays unquantized).
    if (quantized && (shape.at("k") % kQuantBlock != 0 ||
                      (shape.at("n") == cfg.vocab_size && shape.at("k") == cfg.emb_dim)))
      continue;
    RegistryEntry e;
    if (const auto* old = registry.find(kernel, dt, backend->isa(), shape, here)) e = *old;
    e.kernel = kernel;
    e.dtype = dt;
    e.isa = backend->isa();
    e.shape = shape;
    e.candidates.clear();
    harness.clear();  // one shape's weight and reference rows at a time
    const OpDesc op{prefill ? OpKind::Gemm : OpKind::Gemv, dtype, shape, quantized ? kQuantBlock : 0, quant};
    // Each candidate = the heuristic default with the swept keys replaced.
    const TileConfig base = backend->default_tiles(op);
    double best = -1;
    for (const TileConfig& delta : backend->tile_candidates(op)) {
      TileConfig tc = base;
      for (const auto& [key, v] : delta) tc[key] = v;
      const auto r = detail::check_kernel(harness, kernel, shape, dtype, *backend, tc, reps, quant);
      Candidate c;
      c.config = kernel_config_subset(kernel, tc, *backend);
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
