// The kernel-path probe's cache: one JSON file per machine fingerprint, read when it is
// this machine's, measured again when it is missing, foreign or damaged, and written
// atomically (a temporary file renamed over it) because parallel processes may race.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "llmport/error.hpp"
#include "llmport/kernel_probe.hpp"
#include "registry/json_int.hpp"  // header-only strict JSON integers (no registry dependency)

namespace llmport {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "llmport-kernel-probe";
// Bumped whenever a probed kernel changes, so a cache measured by an older build's kernels
// is measured again (2: the quantized linears on 16-column panels).
constexpr int kFormatVersion = 2;

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int key_value(const nlohmann::json& v, const std::string& field) {
  const int x = registry_json::to_int(v, field);
  if (x != 0 && x != 1) throw ConfigError(field + ": expected 0 or 1, got " + v.dump());
  return x;
}

// nullopt: no usable file (missing, or another machine's/level's); throws when damaged.
std::optional<KernelProbe> read_cache(const fs::path& file, const ProbeRequest& req) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str());
  // An older build's file measured older kernels: stale, not damaged (measured again
  // without a warning, as another machine's file is).
  if (j.is_object() && j.contains("format_version") && j["format_version"].is_number_integer() &&
      j["format_version"].get<int64_t>() < kFormatVersion)
    return std::nullopt;
  KernelProbe p = probe_from_json(j);
  // The id alone could collide; the whole fingerprint must be this machine's.
  if (to_json(p.machine) != to_json(req.machine) || p.isa != req.isa) return std::nullopt;
  return p;
}

// Temporary file beside `file`, then rename: a reader sees the old file or the whole new one.
void write_cache(const fs::path& file, const KernelProbe& p) {
  static std::atomic<int> seq{0};
  fs::create_directories(file.parent_path());
  const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(seq++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << to_json(p).dump(1) << "\n";
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error("cannot write " + tmp.string());
    }
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) {  // e.g. `file` is a directory: leave no temporary behind
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw std::runtime_error("cannot rename " + tmp.string() + " to " + file.string() + ": " + ec.message());
  }
}

}  // namespace

nlohmann::json to_json(const KernelProbe& p) {
  nlohmann::json paths = nlohmann::json::array();
  for (const ProbePath& x : p.paths)
    paths.push_back({{"op", x.op}, {"key", x.key}, {"value", x.value}, {"name", x.name},
                     {"shape", x.shape}, {"config", x.config}, {"gflops", x.gflops}});
  nlohmann::json chosen = nlohmann::json::object();
  for (const auto& [op, c] : p.chosen)
    chosen[op] = {{"key", c.key}, {"value", c.value}, {"isa_default", c.isa_default}};
  return {{"format", kFormat},           {"format_version", kFormatVersion},
          {"llmport_version", p.machine.llmport_version},
          {"fingerprint", to_json(p.machine)}, {"isa", p.isa},
          {"measured_at", p.measured_at}, {"seconds", p.seconds},
          {"paths", paths},              {"chosen", chosen}};
}

KernelProbe probe_from_json(const nlohmann::json& j) {
  if (j.at("format").get<std::string>() != kFormat)
    throw ConfigError("format: expected \"" + std::string(kFormat) + "\"");
  if (registry_json::to_int(j.at("format_version"), "format_version") != kFormatVersion)
    throw ConfigError("format_version: expected " + std::to_string(kFormatVersion));
  KernelProbe p;
  const nlohmann::json& f = j.at("fingerprint");
  p.machine.vendor = f.at("vendor").get<std::string>();
  p.machine.family = registry_json::to_int(f.at("family"), "fingerprint.family");
  p.machine.model = registry_json::to_int(f.at("model"), "fingerprint.model");
  p.machine.stepping = registry_json::to_int(f.at("stepping"), "fingerprint.stepping");
  p.machine.isa_flags = f.at("isa_flags").get<std::vector<std::string>>();
  p.machine.threads = registry_json::to_int(f.at("threads"), "fingerprint.threads");
  p.machine.llmport_version = f.at("llmport_version").get<std::string>();
  p.isa = j.at("isa").get<std::string>();
  p.measured_at = j.at("measured_at").get<std::string>();
  p.seconds = j.at("seconds").get<double>();
  for (const auto& x : j.at("paths")) {
    ProbePath q;
    q.op = x.at("op").get<std::string>();
    q.key = x.at("key").get<std::string>();
    q.value = key_value(x.at("value"), "paths.value");
    q.name = x.at("name").get<std::string>();
    q.shape = x.at("shape").get<std::string>();
    q.config = registry_json::to_int_map(x.at("config"), "paths.config");
    q.gflops = x.at("gflops").get<double>();
    if (!(q.gflops >= 0)) throw ConfigError("paths.gflops: expected a rate >= 0");
    p.paths.push_back(q);
  }
  for (const auto& [op, c] : j.at("chosen").items())
    p.chosen[op] = {c.at("key").get<std::string>(), key_value(c.at("value"), "chosen.value"),
                    key_value(c.at("isa_default"), "chosen.isa_default")};
  // What the file says was chosen must be what its own rates choose, and its id the id of
  // its fields: a hand-edited or mixed-up file is damaged, not obeyed.
  if (f.contains("id") && f.at("id").get<std::string>() != p.machine.id())
    throw ConfigError("fingerprint.id: not the id of the fingerprint's fields (" + p.machine.id() + ")");
  if (p.chosen != choose_defaults(p.paths, p.isa))
    throw ConfigError("chosen: does not follow from the measured paths");
  return p;
}

fs::path probe_cache_file(const fs::path& dir, const MachineFingerprint& m) {
  return dir / ("cpu_" + m.id() + ".json");
}

KernelProbe load_or_probe(const ProbeRequest& req, ProbeSource* source) {
  ProbeSource src;
  if (req.cache_dir) src.file = probe_cache_file(*req.cache_dir, req.machine);
  if (src.file && !req.force) {
    try {
      if (auto cached = read_cache(*src.file, req)) {
        src.from_cache = true;
        if (source) *source = src;
        return *cached;
      }
    } catch (const std::exception& e) {
      std::cerr << "warning: kernel probe cache " << src.file->string() << " is damaged (" << e.what()
                << "); measuring again\n";
    }
  }
  KernelProbe p;
  p.machine = req.machine;
  p.isa = req.isa;
  p.measured_at = utc_now();
  const auto t0 = std::chrono::steady_clock::now();
  p.paths = req.measure(req.isa);
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.chosen = choose_defaults(p.paths, p.isa);
  if (src.file) {
    try {
      write_cache(*src.file, p);
      src.written = true;
    } catch (const std::exception& e) {
      std::cerr << "warning: kernel probe cache " << src.file->string() << ": cannot write (" << e.what()
                << "); the measurement serves this process only\n";
    }
  }
  if (source) *source = src;
  return p;
}

}  // namespace llmport
