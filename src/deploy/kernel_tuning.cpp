// The pipeline's use of the registry module (registry.hpp): phase-1 validation, phase-4/5
// sweeps, and per-stage kernel selection. The registry logic itself lives there.
#include "deploy/kernel_tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <regex>
#include <set>
#include <utility>

#include "deploy/util.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/quant_plan.hpp"
#include "llmport/registry.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

namespace {

// Rows of the prefill GEMM entries: min(512, context), as the deploy issue times prefill.
int prefill_m_of(const Manifest& m) {
  int max_seq = m.resolved_config.value("max_seq", 0);
  return max_seq > 0 ? std::min(512, max_seq) : 512;
}

fs::path prefill_snapshot(const fs::path& deployment_dir) {
  return deployment_dir / "phases" / "phase4" / "registry";
}

// A temporary file of an interrupted atomic write (unique_temp_path: ".<name>.tmp.<ids>").
bool is_temp_file(const std::string& name) {
  static const std::regex re(R"(\..+\.tmp\.[0-9.]+)");
  return std::regex_match(name, re);
}

// What KernelRegistry::save writes into a registry directory (a snapshot is a copy of one):
// <kernel>_<dtype>.json holding registry JSON, supported_kernels.md with llmport's marker.
// Anything else in phase 4's snapshot was put there by someone else.
bool is_registry_file(const fs::path& dir, const fs::path& f) {
  if (f.parent_path() != dir) return false;
  const std::string name = f.filename().string();
  if (is_temp_file(name)) return true;
  std::string text;
  try {
    text = slurp(f);
  } catch (const Error&) {
    return false;
  }
  if (name == "supported_kernels.md") return text.find(kSupportedKernelsMarker) != std::string::npos;
  if (f.extension() != ".json") return false;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("kernel") && j.contains("dtype") && j.contains("entries");
}

// Replaces phase 4's snapshot with a copy of the deployment registry as it is now, keeping
// any file of the user's that was in the old snapshot (set_aside_unknown_files).
void snapshot_registry(const Context& ctx) {
  const fs::path snap = prefill_snapshot(ctx.ws.dir());
  set_aside_unknown_files(
      snap, [&](const fs::path& f) { return is_registry_file(snap, f); },
      "phase 4 replaces it with a copy of the deployment registry", std::cerr);
  fs::remove_all(snap);
  fs::create_directories(snap);
  // Only the registry's own files: a user's notes in registry/ stay there, and copying them
  // would have them "found" in the snapshot (and set aside, with a warning) on every re-run.
  const fs::path reg = ctx.ws.registry();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(reg, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && !is_temp_file(name) && is_registry_file(reg, e.path()))
      fs::copy_file(e.path(), snap / name);
  }
}

std::shared_ptr<KernelSelection> selection(const Manifest& m, const fs::path& dir, ConfigStage stage) {
  auto sel = std::make_shared<KernelSelection>();
  sel->prefill_m = prefill_m_of(m);
  sel->cache_dir = dir / "kernel_cache";
  switch (stage) {
    case ConfigStage::Default:  // phases 1-3: heuristic defaults only
      sel->allow_heuristic = true;
      break;
    case ConfigStage::Prefill:  // phase 4's tuned GEMM configs, GEMV still default
      sel->registry = std::make_shared<KernelRegistry>(KernelRegistry::shipped_dir(m.target),
                                                       prefill_snapshot(dir));
      sel->allow_heuristic = true;
      // The decode shapes are unmeasured by design until phase 5: the engine's "not measured
      // on this machine ... kernels sweep MODEL" line would advise what the deploy does next.
      sel->announced = true;
      break;
    case ConfigStage::Tuned:  // every linear shape must be measured
      sel->registry = std::make_shared<KernelRegistry>(KernelRegistry::shipped_dir(m.target), dir / "registry");
      sel->allow_heuristic = false;
      break;
  }
  return sel;
}

nlohmann::json shape_json(const KernelShape& s) { return nlohmann::json(s); }

// The manifest's --quantize-lm-head ("" = lm_head in the base dtype).
QuantType lm_head_quant(const Manifest& m) {
  return m.quantize_lm_head.empty() ? QuantType::None : parse_quant(m.quantize_lm_head);
}

}  // namespace

EngineOptions stage_engine_options(const Manifest& m, const fs::path& deployment_dir, ConfigStage stage,
                                   int threads, const FaultInjection& fault) {
  EngineOptions e;
  e.backend = m.target;
  set_dtype_flag(e, m.dtype);  // q8_0/q4_0: the checkpoint's dtype under quantized projections
  e.quant_lm_head = lm_head_quant(m);
  e.threads = threads;
  e.fault = fault;
  e.kernels = selection(m, deployment_dir, stage);
  return e;
}

std::string stage_label(const fs::path& deployment_dir, ConfigStage stage) {
  switch (stage) {
    case ConfigStage::Default: return "heuristic-default";
    case ConfigStage::Prefill: return "tuned-prefill:" + prefill_snapshot(deployment_dir).string();
    case ConfigStage::Tuned: break;
  }
  return "tuned:" + (deployment_dir / "registry").string();
}

KernelValidation validate_deployment_kernels(Context& ctx) {
  // Every ISA level this host runs (the engine's own level and the ones LLMPORT_CPU_ISA can
  // force), each (kernel, shape, tile config) the engine dispatches, full outputs.
  std::vector<std::unique_ptr<Backend>> owned;
  for (const std::string& level : backend_levels(ctx.m.target))
    owned.push_back(make_backend_at(ctx.m.target, level, ctx.opt.threads));
  std::vector<Backend*> backends;
  for (auto& b : owned) backends.push_back(b.get());
  const std::string engine_isa = make_backend(ctx.m.target, ctx.opt.threads)->isa();
  auto sel = selection(ctx.m, ctx.ws.dir(), ConfigStage::Default);
  // A quantized deployment: its projections' cases are q8_0/q4_0 linears (with their act),
  // and with --quantize-lm-head the lm_head's too (the linear the engine runs).
  std::vector<ValidationRow> rows = validate_kernels(ctx.cfg, ctx.dtype, backends, sel.get(), prefill_m_of(ctx.m),
                                                     ctx.quant, lm_head_quant(ctx.m));
  KernelRegistry reg(KernelRegistry::shipped_dir(ctx.m.target), ctx.ws.registry());
  record_validation(rows, ctx.dtype, engine_isa, reg, ctx.m.name, ctx.opt.threads);
  reg.save();
  return summarize_validation(rows, ctx.dtype);
}

KernelValidation summarize_validation(const std::vector<ValidationRow>& rows, DType dtype) {
  KernelValidation kv;
  kv.n_checked = static_cast<int>(rows.size());
  kv.pass = true;
  for (const auto& r : rows) {
    kv.max_ratio = std::max(kv.max_ratio, r.ratio);
    kv.rows.push_back({{"kernel", r.kernel},
                       {"path", r.path},
                       {"format", r.quant != QuantType::None ? quant_name(r.quant) : dtype_name(dtype)},
                       {"shape", shape_json(r.shape)},
                       {"config", nlohmann::json(r.config)},
                       {"isa", r.isa},
                       {"k", r.k},
                       {"max_abs_err", r.max_abs_err},
                       {"max_rel_err", r.max_rel_err},
                       {"mean_rel_l1", r.mean_rel_l1},
                       {"tolerance", r.tolerance},
                       {"ratio", r.ratio},
                       {"elements", r.n_checked},
                       {"pass", r.pass}});
    if (!r.pass) {
      ++kv.n_failed;
      kv.pass = false;
      if (kv.first_failure.empty()) kv.first_failure = validation_row_string(r);
    }
  }
  return kv;
}

namespace {

// Distinct [n_out, n_in] shapes of the linears a quantized deployment keeps in its base
// dtype (quant_plan.hpp), the only ones registry GEMM/GEMV tile configs serve (tuning a
// quantized projection's shape would record configs nothing uses, which the evaluator
// rightly fails). Empty where every linear, lm_head included, is quantized.
std::set<std::pair<int64_t, int64_t>> kept_linear_shapes(const Context& ctx) {
  std::set<std::pair<int64_t, int64_t>> kept;
  for (const PlannedTensor& t : plan_quantization(ctx.cfg, ctx.dtype, ctx.quant, lm_head_quant(ctx.m)).matrices)
    if (t.quant == QuantType::None && t.role != TensorRole::Embed) kept.insert({t.shape[0], t.shape[1]});
  return kept;
}

}  // namespace

SweepOutcome sweep_deployment_kernels(Context& ctx, bool prefill) {
  std::function<bool(int, int)> shapes;  // every linear shape of an unquantized deployment
  if (ctx.quant != QuantType::None) {
    const auto kept = kept_linear_shapes(ctx);
    if (kept.empty()) {
      SweepOutcome none;
      none.same_as_current = true;
      none.nothing_to_tune = "nothing to tune: every linear is quantized (" + ctx.m.dtype + ", lm_head " +
                             (ctx.m.quantize_lm_head.empty() ? ctx.m.dtype : ctx.m.quantize_lm_head) +
                             "; registry tile configs serve only base-dtype GEMM/GEMV)";
      if (prefill) snapshot_registry(ctx);
      return none;
    }
    shapes = [kept](int n, int k) { return kept.count({n, k}) > 0; };
  }
  KernelRegistry reg(KernelRegistry::shipped_dir(ctx.m.target), ctx.ws.registry());
  const int reps = 3;  // the registry default; a noisy pick would make phase 4-5 timing meaningless
  std::vector<RegistryEntry> entries = sweep_kernels(ctx.cfg, ctx.dtype, prefill, reg, ctx.m.name, ctx.opt.threads,
                                                     prefill_m_of(ctx.m), reps, shapes);
  if (entries.empty()) throw GateError(std::string("kernels sweep recorded no ") + (prefill ? "GEMM" : "GEMV") + " entry");
  if (prefill) snapshot_registry(ctx);  // phase 5 compares against phase 4's configs: keep them as they are now
  // Same configs as the previous stage? Compare what each stage's selection gives every
  // linear weight shape.
  const ConfigStage before = prefill ? ConfigStage::Default : ConfigStage::Prefill;
  const ConfigStage after = prefill ? ConfigStage::Prefill : ConfigStage::Tuned;
  auto backend = make_backend(ctx.m.target, ctx.opt.threads);
  auto sb = selection(ctx.m, ctx.ws.dir(), before), sa = selection(ctx.m, ctx.ws.dir(), after);
  SweepOutcome out;
  out.same_as_current = true;
  for (const auto& e : entries) {
    const int n = e.shape.at("n"), k = e.shape.at("k");
    TileConfig cb = sb->linear_config(*backend, n, k, ctx.dtype);
    TileConfig ca = sa->linear_config(*backend, n, k, ctx.dtype);
    if (cb != ca) out.same_as_current = false;
    double best = e.best_throughput();
    out.best.push_back({{"kernel", e.kernel},
                        {"shape", shape_json(e.shape)},
                        {"best", nlohmann::json(e.best)},
                        {"previous", nlohmann::json(cb)},
                        {"candidates", e.candidates.size()},
                        {prefill ? "gflops" : "gbps", best}});
  }
  return out;
}

void keep_previous_configs(Context& ctx, const SweepOutcome& sweep, bool prefill) {
  KernelRegistry reg(KernelRegistry::shipped_dir(ctx.m.target), ctx.ws.registry());
  const std::string& isa = ctx.m.isa;  // recorded once by the pipeline for this target
  for (const auto& b : sweep.best) {
    const std::string kernel = b.at("kernel").get<std::string>();
    const KernelShape shape = b.at("shape").get<KernelShape>();
    const RegistryEntry* e = reg.find(kernel, std::string(dtype_name(ctx.dtype)), isa, shape,
                                      MachineFingerprint::current(ctx.opt.threads));
    if (!e) throw GateError("keeping the previous configs: the sweep's entry for " + kernel + " " + shape_string(shape) +
                            " is not in " + ctx.ws.registry().string());
    RegistryEntry kept = *e;
    kept.best = kernel_config_subset(kernel, b.at("previous").get<TileConfig>());
    reg.record(kept);
  }
  reg.save();
  if (prefill) snapshot_registry(ctx);
}

void set_aside_user_files_in_kernel_cache(const fs::path& cache_dir, std::ostream& warn) {
  // KernelCache's file names (kernel_cache.hpp): "<content hash>-<kernel key hash>.bin",
  // and the temporary file of one being written.
  static const std::regex entry(R"([0-9a-f]+-[0-9a-f]+\.bin)");
  set_aside_unknown_files(
      cache_dir,
      [&](const fs::path& f) {
        const std::string name = f.filename().string();
        return f.parent_path() == cache_dir && (std::regex_match(name, entry) || is_temp_file(name));
      },
      "the evaluation re-runs verify from an empty kernel cache and removes it", warn);
}

}  // namespace llmport::deploy
