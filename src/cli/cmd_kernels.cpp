// `llmport kernels list|validate|sweep|probe`: the kernel registry from the command line.
//   list     [--registry DIR] [--markdown] [--kernel K] [--dtype D]
//   validate MODEL [--dtype D] [--quantize-lm-head Q] [--threads N] [--isa L] [--prefill-m P] [--registry DIR --name N] [--json]
//   sweep    MODEL (--prefill|--decode) [--registry DIR] [--dtype D] [--threads N] [--prefill-m P] [--reps R] [--name N]
//            (default registry: $XDG_DATA_HOME/llmport/registry/cpu; never the shipped one)
//   probe    [--json] [--force]   this machine's kernel-path probe (llmport/kernel_probe.hpp)
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/engine_flags.hpp"
#include "cli/option_checks.hpp"
#include "cli/registry_arg.hpp"
#include "llmport/data_dir.hpp"
#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/kernel_probe.hpp"
#include "llmport/model_config.hpp"
#include "llmport/op.hpp"
#include "llmport/registry.hpp"

namespace llmport::cli {
namespace {

struct KArgs {
  std::string model, dtype, registry, isa, kernel, name, quantize_lm_head;
  int threads = 0, prefill_m = 0, reps = 3;
  bool markdown = false, json = false, prefill = false, decode = false, force = false;
};

std::string cfg_string(const TileConfig& c) {
  std::string s;
  for (const auto& [k, v] : c) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s.empty() ? "-" : s;
}

std::optional<std::filesystem::path> opt_path(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::filesystem::path>(s);
}

struct ModelInfo {
  ModelConfig cfg;
  DType dtype;
  QuantType quant = QuantType::None;  ///< --dtype q8_0|q4_0: the projections' format
  QuantType quant_lm_head = QuantType::None;  ///< --quantize-lm-head: lm_head's format
  std::string name;
  int prefill_m;
};

ModelInfo load_info(const KArgs& a) {
  ModelInfo mi;
  const std::string dir = resolve_model_dir(a.model, true);
  mi.cfg = load_model_config(dir);
  // q8_0/q4_0: the checkpoint's dtype stays the base of the unquantized tensors (as the
  // engine does).
  // The engine's own reading of --dtype (and its message naming all five dtypes) and of
  // --quantize-lm-head (as run/bench: q8_0|q4_0, only over a quantized --dtype).
  const EngineOptions flag =
      engine_options_from_flags({"cpu", 0, dtype_flag(a.dtype), /*registry=*/"", /*fault=*/"", a.quantize_lm_head});
  mi.quant = flag.quant;
  mi.quant_lm_head = flag.quant_lm_head;
  std::filesystem::path p(dir);
  if (p.filename() == "config.json") p = p.parent_path();
  mi.dtype = flag.dtype ? *flag.dtype : checkpoint_dtype(mi.cfg, p, DType::BF16);
  std::string nm = a.name.empty() ? std::filesystem::absolute(p).lexically_normal().filename().string() : a.name;
  if (nm.empty()) nm = std::filesystem::absolute(p).lexically_normal().parent_path().filename().string();
  std::transform(nm.begin(), nm.end(), nm.begin(), [](unsigned char c) { return std::tolower(c); });
  mi.name = nm;
  const int ctx = mi.cfg.max_seq > 0 ? mi.cfg.max_seq : mi.cfg.max_position_embeddings;
  if (a.prefill_m > 0 && ctx > 0 && a.prefill_m > ctx)
    throw UsageError("--prefill-m " + std::to_string(a.prefill_m) + " exceeds the model context of " +
                     std::to_string(ctx) + " tokens");
  mi.prefill_m = a.prefill_m > 0 ? a.prefill_m : std::max(1, std::min(512, ctx > 0 ? ctx : 512));
  return mi;
}

int run_list(const KArgs& a) {
  // Read only: a path that is not a registry directory is refused as run --registry refuses
  // it (KernelRegistry would read the shipped registry alone, without a word).
  if (!a.registry.empty()) check_registry_dir(a.registry);
  // Entries name their weights' format: a dtype, or q8_0 / q4_0 for quantized linears.
  std::string format;
  if (!a.dtype.empty()) {
    EngineOptions o;
    set_dtype_flag(o, a.dtype);  // names all five dtypes when it refuses one
    format = o.quant != QuantType::None ? std::string(quant_name(o.quant)) : std::string(dtype_name(*o.dtype));
  }
  // An unknown name would list nothing and exit 0, as if the registry held no such entries.
  if (!a.kernel.empty()) {
    try {
      parse_op_kind(a.kernel);
    } catch (const UsageError& e) {
      throw UsageError("--kernel: " + std::string(e.what()));
    }
  }
  KernelRegistry reg(KernelRegistry::shipped_dir("cpu"), opt_path(a.registry));
  std::vector<RegistryEntry> es;
  for (auto& e : reg.entries())
    if ((a.kernel.empty() || e.kernel == a.kernel) && (format.empty() || e.dtype == format)) es.push_back(e);
  if (a.markdown) {
    std::cout << supported_kernels_markdown(es);
    return kExitOk;
  }
  if (a.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : es) {
      auto j = to_json(e);
      j["kernel"] = e.kernel;
      j["dtype"] = e.dtype;
      arr.push_back(j);
    }
    std::cout << arr.dump(1) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{:<18} {:<5} {:<11} {:<34} {:<40} {:>12} {}\n", "kernel", "dtype",
                           "isa", "shape", "best config", "throughput", "used_by");
  for (const auto& e : es) {
    std::string users;
    for (const auto& u : e.used_by) users += (users.empty() ? "" : ",") + u;
    double thr = 0;
    bool flops = false;
    for (const auto& c : e.candidates)
      if (c.config == e.best) thr = c.gflops > 0 ? (flops = true, c.gflops) : c.gbps;
    std::cout << fmt::format("{:<18} {:<5} {:<11} {:<34} {:<40} {:>12} {}\n", e.kernel, e.dtype,
                             e.isa, shape_string(e.shape), cfg_string(e.best),
                             thr > 0 ? fmt::format("{:.1f} {}", thr, flops ? "GF/s" : "GB/s") : "-",
                             users);
  }
  if (es.empty()) std::cout << "(no entries)\n";
  return kExitOk;
}

int run_validate(const KArgs& a) {
  if (!a.registry.empty()) {  // before the work, not after
    check_not_in_data_dir(a.registry, "--registry");
    check_registry_outputs(a.registry);
  }
  const ModelInfo mi = load_info(a);
  auto backend = a.isa.empty() ? make_backend("cpu", a.threads)
                               : make_backend_at("cpu", a.isa, a.threads);
  std::shared_ptr<KernelRegistry> reg;
  if (!a.registry.empty())
    reg = std::make_shared<KernelRegistry>(KernelRegistry::shipped_dir("cpu"), opt_path(a.registry));
  KernelSelection sel;
  sel.registry = reg;
  sel.prefill_m = mi.prefill_m;
  const auto rows = validate_kernels(mi.cfg, mi.dtype, *backend, &sel, mi.prefill_m, mi.quant, mi.quant_lm_head);
  int fails = 0;
  double max_ratio = 0;
  for (const auto& r : rows) {
    fails += r.pass ? 0 : 1;
    max_ratio = std::max(max_ratio, r.ratio);
  }
  if (a.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : rows)
      arr.push_back({{"kernel", r.kernel}, {"path", r.path}, {"isa", r.isa}, {"shape", r.shape},
                     {"config", r.config}, {"k", r.k}, {"max_abs_err", r.max_abs_err},
                     {"max_rel_err", r.max_rel_err}, {"mean_rel_l1", r.mean_rel_l1},
                     {"tolerance", r.tolerance}, {"ratio", r.ratio}, {"n_checked", r.n_checked},
                     {"format", r.quant != QuantType::None ? quant_name(r.quant) : dtype_name(mi.dtype)},
                     {"pass", r.pass}});
    std::cout << nlohmann::json{{"model", mi.name}, {"dtype", std::string(dtype_name(mi.dtype))},
                                {"quant", std::string(quant_name(mi.quant))},
                                {"quant_lm_head", std::string(quant_name(mi.quant_lm_head))},
                                {"isa", backend->isa()}, {"rows", arr}, {"failed", fails},
                                {"max_ratio", max_ratio}}
                     .dump(1)
              << "\n";
  } else {
    std::cout << fmt::format(
        "kernels validate {} dtype={}{}{} backend=cpu isa={}\n", mi.name, dtype_name(mi.dtype),
        mi.quant != QuantType::None ? fmt::format(" quant={}", quant_name(mi.quant)) : "",
        mi.quant_lm_head != QuantType::None ? fmt::format(" lm_head={}", quant_name(mi.quant_lm_head)) : "",
        backend->isa());
    std::cout << fmt::format("{:<30} {:<52} {:<34} {:>10} {:>10} {:>9} {}\n", "kernel", "shape",
                             "config", "err/scale", "tolerance", "ratio", "result");
    for (const auto& r : rows)
      std::cout << fmt::format("{:<30} {:<52} {:<34} {:>10.2e} {:>10.2e} {:>9.2e} {}\n",
                               r.kernel + (r.quant != QuantType::None ? " " + std::string(quant_name(r.quant)) : "") +
                                   (r.path.empty() ? "" : " " + r.path),
                               shape_string(r.shape), cfg_string(r.config), r.max_rel_err,
                               r.tolerance, r.ratio, r.pass ? "PASS" : "FAIL");
    std::cout << fmt::format("{} of {} kernel checks pass (every output element; largest "
                             "error/tolerance {:.3g}; tolerance(op, dtype, k): docs/verification.md)\n",
                             rows.size() - fails, rows.size(), max_ratio);
    if (!sel.heuristic_used.empty())
      std::cout << fmt::format("note: {} linear shape(s) used the heuristic default config "
                               "(not swept)\n", sel.heuristic_used.size());
    const std::string foreign = sel.foreign_line();
    if (!foreign.empty()) std::cerr << foreign << "\n";
  }
  if (reg) {
    record_validation(rows, mi.dtype, backend->isa(), *reg, mi.name, a.threads);
    reg->save();
  }
  return fails == 0 ? kExitOk : kExitCheckFailed;
}

int run_sweep(KArgs a) {
  if (a.prefill == a.decode) throw UsageError("kernels sweep: give exactly one of --prefill or --decode");
  // The shipped registry is read-only (an installed one belongs to the package): without
  // --registry the measurements go to the user's registry.
  if (a.registry.empty()) a.registry = (user_registry_dir() / "cpu").string();
  check_not_in_data_dir(a.registry, "--registry");
  check_registry_outputs(a.registry);
  const ModelInfo mi = load_info(a);
  KernelRegistry reg(KernelRegistry::shipped_dir("cpu"), opt_path(a.registry));
  const auto es = sweep_kernels(mi.cfg, mi.dtype, a.prefill, reg, mi.name, a.threads, mi.prefill_m,
                                std::max(1, a.reps), {}, mi.quant);
  std::cout << fmt::format("kernels sweep {} {} dtype={} -> {}\n", mi.name, a.prefill ? "prefill" : "decode",
                           mi.quant != QuantType::None ? quant_name(mi.quant) : dtype_name(mi.dtype), a.registry);
  for (const auto& e : es) {
    double thr = 0;
    for (const auto& c : e.candidates)
      if (c.config == e.best) thr = a.prefill ? c.gflops : c.gbps;
    std::cout << fmt::format("{:<6} {:<30} best {:<40} {:.1f} {} ({} candidates)\n", e.kernel,
                             shape_string(e.shape), cfg_string(e.best), thr,
                             a.prefill ? "GFLOP/s" : "GB/s", e.candidates.size());
  }
  return kExitOk;
}

// The chosen defaults without a probe (LLMPORT_PROBE=0): every probed op's ISA default.
std::map<std::string, ProbeChoice> isa_defaults(const std::string& isa) {
  std::map<std::string, ProbeChoice> out;
  for (const auto& [op, key] : {std::pair<std::string, std::string>{"gemm bf16", "fma"},
                                {"gemv bf16", kPrefetchTileKey}, {"gemv q8_0", kActTileKey},
                                {"gemv q4_0", kActTileKey}})
    if (const auto d = isa_default_path(op, isa)) out[op] = {key, *d, *d};
  return out;
}

nlohmann::json chosen_json(const std::map<std::string, ProbeChoice>& chosen) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [op, c] : chosen) j[op] = {{"key", c.key}, {"value", c.value}, {"isa_default", c.isa_default}};
  return j;
}

int run_probe(const KArgs& a) {
  const ProbeRequest req = machine_probe_request(a.force);
  const std::string cache = req.cache_dir ? probe_cache_file(*req.cache_dir, req.machine).string() : "";
  if (!probe_enabled()) {
    const auto chosen = isa_defaults(req.isa);
    if (a.json) {
      std::cout << nlohmann::json{{"enabled", false}, {"fingerprint", to_json(req.machine)},
                                  {"isa", req.isa}, {"paths", nlohmann::json::array()},
                                  {"chosen", chosen_json(chosen)}, {"cache_file", cache}}
                       .dump(1)
                << "\n";
      return kExitOk;
    }
    std::cout << fmt::format("kernels probe: disabled by LLMPORT_PROBE={} (ISA-flag defaults at {})\n",
                             std::getenv("LLMPORT_PROBE"), req.isa);
    for (const auto& [op, c] : chosen) std::cout << fmt::format("default {:<10} {}={}\n", op, c.key, c.value);
    return kExitOk;
  }
  ProbeSource src;
  const KernelProbe p = load_or_probe(req, &src);
  if (a.json) {
    nlohmann::json paths = to_json(p).at("paths");
    std::cout << nlohmann::json{{"enabled", true}, {"fingerprint", to_json(p.machine)}, {"isa", p.isa},
                                {"measured_at", p.measured_at}, {"seconds", p.seconds},
                                {"from_cache", src.from_cache}, {"cache_file", cache},
                                {"cache_written", src.written},
                                {"paths", paths}, {"chosen", chosen_json(p.chosen)}}
                     .dump(1)
              << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("kernels probe: {} ({})\n", p.machine.describe(), p.machine.id());
  std::cout << fmt::format("isa {}, measured {} in {:.2f} s ({}), cache {}\n", p.isa, p.measured_at,
                           p.seconds, src.from_cache ? "read from the cache" : "measured now",
                           cache.empty()                        ? "none (neither XDG_DATA_HOME nor HOME is set)"
                           : src.from_cache || src.written ? cache
                                                            : cache + " (not written: see the warning)");
  std::cout << fmt::format("{:<10} {:<10} {:<6} {:<20} {:>10}\n", "op", "path", "key", "shape", "GFLOP/s");
  for (const ProbePath& x : p.paths)
    std::cout << fmt::format("{:<10} {:<10} {:<6} {:<20} {:>10.1f}\n", x.op, x.name,
                             fmt::format("{}={}", x.key, x.value), x.shape, x.gflops);
  if (p.paths.empty()) std::cout << "(no op has two paths at this level)\n";
  const std::map<std::string, double> disturbed = disturbed_ops(p.paths);
  for (const auto& [op, c] : p.chosen) {
    const auto d = disturbed.find(op);
    const std::string why =
        d != disturbed.end() ? fmt::format("kept: timed while other work held the cores, {:.0f}% waiting", 100 * d->second)
        : c.value == c.isa_default ? std::string("kept")
                                   : fmt::format("measured faster by more than {:.0f}%", op_margin(op) * 100);
    std::cout << fmt::format("default {:<10} {}={} ({}; ISA-flag default {})\n", op, c.key, c.value, why,
                             c.isa_default);
  }
  std::cout << "registry entries measured on this machine override these defaults per shape\n";
  return kExitOk;
}

Registrar reg_kernels({"kernels", "Kernel registry: list, validate a model's kernels, sweep tile configs, probe paths",
                       [](CLI::App& sub) -> std::function<int()> {
                         auto a = std::make_shared<KArgs>();
                         sub.require_subcommand(1);
                         auto* list = sub.add_subcommand("list", "List registry entries");
                         list->add_option("--registry", a->registry, "Writable registry dir (looked up first)");
                         auto* md = list->add_flag("--markdown", a->markdown, "Print supported_kernels.md");
                         list->add_flag("--json", a->json, "Print JSON")->excludes(md);
                         list->add_option("--kernel", a->kernel, "Only this kernel");
                         list->add_option("--dtype", a->dtype, "Only this format (bf16, fp16, fp32, q8_0, q4_0)");
                         auto* val = sub.add_subcommand("validate", "Every kernel x shape of MODEL vs the reference kernels");
                         auto* sw = sub.add_subcommand("sweep", "Try tile configs for MODEL's linears, record the best");
                         for (CLI::App* s : {val, sw}) {
                           add_model_arg(*s, &a->model);
                           s->add_option("--dtype", a->dtype,
                                         "bf16|fp16|fp32|q8_0|q4_0 (default: checkpoint dtype; q8_0/q4_0 quantize "
                                         "the layer projections over the checkpoint's dtype)");
                           s->add_option("--threads,-t", a->threads, "Threads (0 = all cores)")
                               ->check(thread_count());
                           s->add_option("--registry", a->registry, "Writable registry dir");
                           // m = 1 is the decode GEMV (validated and swept on its own): a prefill
                           // GEMM has at least 2 rows.
                           s->add_option("--prefill-m", a->prefill_m,
                                         "Prefill GEMM rows, >= 2 (default min(512, context))")
                               ->check(at_least(2));
                           s->add_option("--name", a->name, "Model name for used_by (default: directory name)");
                         }
                         val->add_option("--isa", a->isa, "Force the ISA level (avx512bf16|avx512|avx2|scalar)");
                         val->add_option("--quantize-lm-head", a->quantize_lm_head,
                                         "q8_0 | q4_0: validate lm_head quantized too, as run/deploy run it "
                                         "(needs a quantized --dtype)");
                         val->add_flag("--json", a->json, "Print JSON");
                         sw->add_flag("--prefill", a->prefill, "Sweep the prefill GEMM");
                         sw->add_flag("--decode", a->decode, "Sweep the decode GEMV");
                         sw->add_option("--reps", a->reps, "Timed repetitions per candidate")
                             ->check(at_least(1));
                         auto* pr = sub.add_subcommand("probe", "Time this machine's kernel paths; show the chosen defaults");
                         pr->add_flag("--json", a->json, "Print JSON");
                         pr->add_flag("--force", a->force, "Measure again (replaces the cached probe)");
                         return [a, list, val, sw, pr]() -> int {
                           if (list->parsed()) return run_list(*a);
                           if (pr->parsed()) return run_probe(*a);
                           if (val->parsed()) return run_validate(*a);
                           if (sw->parsed()) return run_sweep(*a);
                           return kExitBadInput;
                         };
                       }});

}  // namespace
}  // namespace llmport::cli
