// Registry JSON files, exact lookup with a helpful miss, and supported_kernels.md.
#include "llmport/registry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "llmport/data_dir.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/op.hpp"
#include "registry/json_int.hpp"

namespace llmport {

std::string shape_string(const KernelShape& s) {
  std::string out;
  for (const auto& [k, v] : s) out += (out.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return out;
}

double RegistryEntry::best_throughput() const {
  for (const auto& c : candidates)
    if (c.config == best) return c.gflops > 0 ? c.gflops : c.gbps;
  return 0;
}

nlohmann::json to_json(const RegistryEntry& e) {
  nlohmann::json j;
  j["shape"] = e.shape;
  j["isa"] = e.isa;
  j["best"] = e.best;
  j["validated"] = e.validated;
  j["heuristic"] = e.heuristic;
  j["used_by"] = e.used_by;
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& c : e.candidates)
    cands.push_back({{"config", c.config},
                     {"gflops", c.gflops},
                     {"gbps", c.gbps},
                     {"mean_rel_l1", c.mean_rel_l1},
                     {"max_abs_err", c.max_abs_err},
                     {"pass", c.pass}});
  j["candidates"] = cands;
  j["provenance"] = {{"cpu", e.provenance.cpu},
                     {"flags", e.provenance.flags},
                     {"compiler", e.provenance.compiler},
                     {"llmport_version", e.provenance.llmport_version},
                     {"date", e.provenance.date},
                     {"threads", e.provenance.threads}};
  if (!e.provenance.fingerprint.empty()) j["provenance"]["fingerprint"] = to_json(e.provenance.fingerprint);
  return j;
}

namespace {
// The tile keys that name one of two kernel paths (fma, pf, act) are 0 or 1 on every
// backend, and every other key is a tile size (mr, np, kc, ...), at least 1: anything else
// is refused where the file is read, naming it, rather than by the backend when a run
// first uses the entry (without the file's name) or never, for an entry of another machine.
void check_path_keys(const TileConfig& c, const std::string& field) {
  for (const auto& [k, v] : c) {
    const bool path_key = k == "fma" || k == kPrefetchTileKey || k == kActTileKey;
    if (path_key && v != 0 && v != 1)
      throw ConfigError(field + "." + k + ": expected 0 or 1, got " + std::to_string(v));
    if (!path_key && v < 1) throw ConfigError(field + "." + k + ": a tile size, expected >= 1, got " + std::to_string(v));
  }
}
}  // namespace

RegistryEntry entry_from_json(const nlohmann::json& j, const std::string& where) {
  RegistryEntry e;
  try {
    e.shape = registry_json::to_int_map(j.at("shape"), "shape");
    e.isa = j.at("isa").get<std::string>();
    e.best = registry_json::to_int_map(j.at("best"), "best");
    check_path_keys(e.best, "best");
    e.validated = j.value("validated", false);
    e.heuristic = j.value("heuristic", false);
    e.used_by = j.value("used_by", std::vector<std::string>{});
    for (const auto& c : j.value("candidates", nlohmann::json::array())) {
      Candidate cd;
      cd.config = registry_json::to_int_map(c.at("config"), "candidates[].config");
      check_path_keys(cd.config, "candidates[].config");
      cd.gflops = c.value("gflops", 0.0);
      cd.gbps = c.value("gbps", 0.0);
      cd.mean_rel_l1 = c.value("mean_rel_l1", 0.0);
      cd.max_abs_err = c.value("max_abs_err", 0.0);
      cd.pass = c.value("pass", true);
      e.candidates.push_back(cd);
    }
    if (j.contains("provenance")) {
      const auto& p = j["provenance"];
      e.provenance.cpu = p.value("cpu", "");
      e.provenance.flags = p.value("flags", "");
      e.provenance.compiler = p.value("compiler", "");
      e.provenance.llmport_version = p.value("llmport_version", "");
      e.provenance.date = p.value("date", "");
      e.provenance.threads = p.contains("threads") ? registry_json::to_int(p["threads"], "provenance.threads") : 0;
      if (p.contains("fingerprint")) e.provenance.fingerprint = fingerprint_from_json(p["fingerprint"]);
    }
  } catch (const nlohmann::json::exception& ex) {
    throw ConfigError(where + ": malformed registry entry: " + ex.what());
  } catch (const ConfigError& ex) {  // a field registry_json refused
    throw ConfigError(where + ": malformed registry entry: " + ex.what());
  }
  return e;
}

namespace {

// The files save() writes are <op name>_<dtype>.json ("gemm_bf16.json",
// "linear_group_qkv_fp32.json"). Another .json beside them (a user's notes.json in a
// deployment's registry/) is not the registry's: it is left alone, not read as a damaged
// registry file that stops every run.
bool registry_file_name(const std::string& name) {
  for (OpKind k : kAllOps)
    if (name.rfind(std::string(op_name(k)) + "_", 0) == 0) return true;
  return false;
}

std::vector<RegistryEntry> load_dir(const std::filesystem::path& dir) {
  std::vector<RegistryEntry> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  std::vector<std::filesystem::path> files;
  for (const auto& de : std::filesystem::directory_iterator(dir))
    if (de.path().extension() == ".json" && registry_file_name(de.path().filename().string()))
      files.push_back(de.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const nlohmann::json j = read_json_file(f);
    const std::string where = f.string();
    if (!j.is_object() || !j.contains("kernel") || !j.contains("dtype") || !j.contains("entries") ||
        !j["entries"].is_array())
      throw ConfigError(where + ": registry file needs fields kernel, dtype, entries[]");
    const std::string target = j.value("target", "cpu");
    for (const auto& ej : j["entries"]) {
      RegistryEntry e = entry_from_json(ej, where);
      e.target = target;
      e.kernel = j["kernel"].get<std::string>();
      e.dtype = j["dtype"].get<std::string>();
      out.push_back(std::move(e));
    }
  }
  return out;
}

bool same_key(const RegistryEntry& e, const std::string& kernel, const std::string& dtype,
              const std::string& isa, const KernelShape& shape) {
  return e.kernel == kernel && e.dtype == dtype && e.isa == isa && e.shape == shape;
}

// Measured on `machine` (an entry without a fingerprint belongs to no machine).
bool measured_on(const RegistryEntry& e, const MachineFingerprint& machine) {
  return !e.provenance.fingerprint.empty() && e.provenance.fingerprint.id() == machine.id();
}

bool same_entry(const RegistryEntry& a, const RegistryEntry& b) {
  return same_key(a, b.kernel, b.dtype, b.isa, b.shape) &&
         a.provenance.fingerprint.id() == b.provenance.fingerprint.id() &&
         a.provenance.fingerprint.empty() == b.provenance.fingerprint.empty();
}

// Distance between shapes of one kernel: sum of |log2 ratio| over shared dims.
double shape_distance(const KernelShape& a, const KernelShape& b) {
  double d = 0;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end()) {
      d += 100;
      continue;
    }
    d += std::abs(std::log2(std::max(1, v)) - std::log2(std::max(1, it->second)));
  }
  return d;
}

}  // namespace

std::filesystem::path KernelRegistry::shipped_dir(const std::string& target) {
  return data_dir() / "registry" / target;
}

KernelRegistry::KernelRegistry(std::filesystem::path shipped,
                               std::optional<std::filesystem::path> writable)
    : shipped_(std::move(shipped)), writable_(std::move(writable)) {
  shipped_entries_ = load_dir(shipped_);
  if (writable_) writable_entries_ = load_dir(*writable_);
}

const RegistryEntry* KernelRegistry::find(const std::string& kernel, const std::string& dtype,
                                          const std::string& isa, const KernelShape& shape,
                                          const MachineFingerprint& machine) const {
  for (const auto* list : {&writable_entries_, &shipped_entries_})
    for (const auto& e : *list)
      if (same_key(e, kernel, dtype, isa, shape) && measured_on(e, machine)) return &e;
  return nullptr;
}

std::vector<const RegistryEntry*> KernelRegistry::find_foreign(const std::string& kernel,
                                                               const std::string& dtype,
                                                               const std::string& isa,
                                                               const KernelShape& shape,
                                                               const MachineFingerprint& machine) const {
  std::vector<const RegistryEntry*> out;
  for (const auto* list : {&writable_entries_, &shipped_entries_})
    for (const auto& e : *list)
      if (same_key(e, kernel, dtype, isa, shape) && !measured_on(e, machine)) out.push_back(&e);
  return out;
}

const RegistryEntry& KernelRegistry::lookup(const std::string& kernel, const std::string& dtype,
                                            const std::string& isa, const KernelShape& shape,
                                            const MachineFingerprint& machine) const {
  if (const auto* e = find(kernel, dtype, isa, shape, machine)) return *e;
  std::vector<std::pair<double, std::string>> near;
  for (const auto& e : entries())
    if (e.kernel == kernel && e.dtype == dtype && e.isa == isa && measured_on(e, machine))
      near.emplace_back(shape_distance(shape, e.shape), shape_string(e.shape));
  std::sort(near.begin(), near.end());
  std::string list;
  for (std::size_t i = 0; i < near.size() && i < 3; ++i)
    list += (i ? "; " : "") + near[i].second;
  const auto foreign = find_foreign(kernel, dtype, isa, shape, machine);
  const std::string elsewhere =
      foreign.empty() ? ""
                      : fmt::format(" ({} entr{} of this shape measured on {}, not this machine, "
                                    "skipped)",
                                    foreign.size(), foreign.size() == 1 ? "y" : "ies",
                                    foreign.front()->provenance.fingerprint.describe());
  const bool prefill = kernel == "gemm" || kernel == "attention_prefill";
  throw UsageError(fmt::format(
      "kernel registry: {} {} ({}) shape {} is not measured on this machine{}; nearest measured "
      "here: {}; measure it with `llmport kernels sweep MODEL --{} --dtype {}`",
      kernel, dtype, isa, shape_string(shape), elsewhere, list.empty() ? "none" : list,
      prefill ? "prefill" : "decode", dtype));
}

void KernelRegistry::record(const RegistryEntry& e) {
  if (!writable_)
    throw UsageError("kernel registry: the shipped registry is read-only; pass --registry DIR");
  for (auto& w : writable_entries_)
    if (same_entry(w, e)) {
      std::set<std::string> users(w.used_by.begin(), w.used_by.end());
      users.insert(e.used_by.begin(), e.used_by.end());
      const bool validated = w.validated;
      w = e;
      w.used_by.assign(users.begin(), users.end());
      w.validated = e.validated || (validated && e.best == w.best);
      return;
    }
  writable_entries_.push_back(e);
}

std::vector<RegistryEntry> KernelRegistry::entries() const {
  std::vector<RegistryEntry> out = writable_entries_;
  for (const auto& e : shipped_entries_)
    if (std::none_of(writable_entries_.begin(), writable_entries_.end(),
                     [&](const RegistryEntry& w) { return same_entry(w, e); }))
      out.push_back(e);
  return out;
}

void KernelRegistry::save() const {
  if (!writable_)
    throw UsageError("kernel registry: the shipped registry is read-only; pass --registry DIR");
  std::filesystem::create_directories(*writable_);
  std::map<std::pair<std::string, std::string>, std::vector<const RegistryEntry*>> files;
  for (const auto& e : writable_entries_) files[{e.kernel, e.dtype}].push_back(&e);
  for (const auto& [kd, list] : files) {
    nlohmann::json j;
    j["target"] = list.front()->target;
    j["kernel"] = kd.first;
    j["dtype"] = kd.second;
    nlohmann::json arr = nlohmann::json::array();
    std::vector<const RegistryEntry*> sorted = list;
    std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
      return std::tie(a->isa, a->shape) < std::tie(b->isa, b->shape);
    });
    for (const auto* e : sorted) arr.push_back(to_json(*e));
    j["entries"] = arr;
    // The registry's own data (loaded above, so it parsed as registry JSON): replaced,
    // through a temporary file.
    write_output_file(*writable_ / (kd.first + "_" + kd.second + ".json"), j.dump(1) + "\n", Overwrite::Always);
  }
  write_output_file(*writable_ / "supported_kernels.md", supported_kernels_markdown(writable_entries_),
                    Overwrite::IfMarked, kSupportedKernelsMarker);
}

void check_registry_outputs(const std::filesystem::path& dir) {
  check_output_path(dir / "supported_kernels.md", Overwrite::IfMarked, kSupportedKernelsMarker);
}

std::string supported_kernels_markdown(const std::vector<RegistryEntry>& entries) {
  std::ostringstream o;
  o << "# Supported kernels\n\n"
    << kSupportedKernelsMarker << "\n\n"
       "| kernel | dtype | isa | shape | best config | throughput | mean rel L1 | validated | "
       "heuristic | used by | measured |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::vector<const RegistryEntry*> sorted;
  for (const auto& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return std::tie(a->kernel, a->dtype, a->isa, a->shape) <
           std::tie(b->kernel, b->dtype, b->isa, b->shape);
  });
  for (const auto* e : sorted) {
    std::string cfg, users, thr = "-", err = "-";
    for (const auto& [k, v] : e->best) cfg += (cfg.empty() ? "" : " ") + k + "=" + std::to_string(v);
    for (const auto& u : e->used_by) users += (users.empty() ? "" : ", ") + u;
    for (const auto& c : e->candidates)
      if (c.config == e->best) {
        thr = c.gflops > 0 ? fmt::format("{:.1f} GFLOP/s", c.gflops)
                           : (c.gbps > 0 ? fmt::format("{:.1f} GB/s", c.gbps) : "-");
        err = fmt::format("{:.2e}", c.mean_rel_l1);
      }
    o << "| " << e->kernel << " | " << e->dtype << " | " << e->isa << " | "
      << shape_string(e->shape) << " | " << (cfg.empty() ? "default" : cfg) << " | " << thr
      << " | " << err << " | " << (e->validated ? "yes" : "no") << " | "
      << (e->heuristic ? "yes" : "no") << " | " << users << " | " << e->provenance.date << " |\n";
  }
  return o.str();
}

}  // namespace llmport
