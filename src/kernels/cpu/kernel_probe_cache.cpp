// The kernel-path probe's cache: one JSON file per machine fingerprint, read when it is
// this machine's, measured again when it is missing, foreign or damaged, and written
// atomically (a temporary file renamed over it) because parallel processes may race.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/kernel_probe.hpp"
#include "registry/json_int.hpp"  // header-only strict JSON integers (no registry dependency)

namespace llmport {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "llmport-kernel-probe";
// Bumped whenever a probed kernel changes, so a cache measured by an older build's kernels
// is measured again (2: the quantized linears on 16-column panels; 3: the decode GEMV's
// prefetch hint).
constexpr int kFormatVersion = 4;  // 4: paths[].wait_share

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

// The file's text; ConfigError saying why it cannot be read (never a library's message).
std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(std::string("cannot be read: ") + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ConfigError(std::string("cannot be read: ") + std::strerror(errno));
  return ss.str();
}

// The text as JSON; ConfigError with the byte where the syntax breaks.
nlohmann::json parse_text(const std::string& text) {
  if (text.empty()) throw ConfigError("empty, not JSON");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann counts the end of input as one byte past the text ("byte 7 of 6").
    if (e.byte > text.size()) throw ConfigError(fmt::format("not valid JSON (unexpected end of file at byte {})", text.size()));
    throw ConfigError(fmt::format("not valid JSON (syntax error at byte {} of {})", e.byte, text.size()));
  }
}

// nullopt: no usable file (missing, or another machine's/level's); throws ConfigError when
// damaged.
std::optional<KernelProbe> read_cache(const fs::path& file, const ProbeRequest& req) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  const nlohmann::json j = parse_text(read_text(file));
  // An older build's file measured older kernels: stale, not damaged (measured again
  // without a warning, as another machine's file is).
  if (j.is_object() && j.contains("format_version") && j["format_version"].is_number_integer() &&
      j["format_version"].get<int64_t>() < kFormatVersion)
    return std::nullopt;
  KernelProbe p = probe_from_json(j);
  // The id alone could collide; the whole fingerprint must be this machine's.
  if (to_json(p.machine) != to_json(req.machine) || p.isa != req.isa) return std::nullopt;
  // Never written by load_or_probe; a file that holds one would keep the defaults for good.
  if (!disturbed_ops(p.paths).empty()) return std::nullopt;
  return p;
}

// write_output_file: a temporary file beside `file`, then rename, so a reader sees the old
// file or the whole new one; a directory it cannot create is worded by it (UsageError).
void write_cache(const fs::path& file, const KernelProbe& p) {
  write_output_file(file, to_json(p).dump(1) + "\n", Overwrite::Always);
}

}  // namespace

nlohmann::json to_json(const KernelProbe& p) {
  nlohmann::json paths = nlohmann::json::array();
  for (const ProbePath& x : p.paths)
    paths.push_back({{"op", x.op}, {"key", x.key}, {"value", x.value}, {"name", x.name},
                     {"shape", x.shape}, {"config", x.config}, {"gflops", x.gflops},
                     {"wait_share", x.wait_share}});
  nlohmann::json chosen = nlohmann::json::object();
  for (const auto& [op, c] : p.chosen)
    chosen[op] = {{"key", c.key}, {"value", c.value}, {"isa_default", c.isa_default}};
  return {{"format", kFormat},           {"format_version", kFormatVersion},
          {"llmport_version", p.machine.llmport_version},
          {"fingerprint", to_json(p.machine)}, {"isa", p.isa},
          {"measured_at", p.measured_at}, {"seconds", p.seconds},
          {"paths", paths},              {"chosen", chosen}};
}

namespace {
// Typed fields of the probe file, named by their path ("paths[2].gflops") in ConfigError.
const nlohmann::json& field(const nlohmann::json& j, const std::string& where, const std::string& key) {
  const std::string name = where.empty() ? key : where + "." + key;
  if (!j.is_object()) throw ConfigError((where.empty() ? "the top level" : where) + ": expected an object");
  const auto it = j.find(key);
  if (it == j.end()) throw ConfigError(name + ": missing");
  return *it;
}
std::string text(const nlohmann::json& j, const std::string& where, const std::string& key) {
  const nlohmann::json& v = field(j, where, key);
  if (!v.is_string()) throw ConfigError((where.empty() ? key : where + "." + key) + ": expected a string, got " + v.dump());
  return v.get<std::string>();
}
double number(const nlohmann::json& j, const std::string& where, const std::string& key) {
  const nlohmann::json& v = field(j, where, key);
  if (!v.is_number()) throw ConfigError((where.empty() ? key : where + "." + key) + ": expected a number, got " + v.dump());
  return v.get<double>();
}
int integer(const nlohmann::json& j, const std::string& where, const std::string& key) {
  return registry_json::to_int(field(j, where, key), where.empty() ? key : where + "." + key);
}
std::vector<std::string> texts(const nlohmann::json& j, const std::string& where, const std::string& key) {
  const nlohmann::json& v = field(j, where, key);
  const std::string name = where + "." + key;
  if (!v.is_array()) throw ConfigError(name + ": expected a list of strings, got " + v.dump());
  std::vector<std::string> out;
  for (const auto& x : v) {
    if (!x.is_string()) throw ConfigError(name + ": expected a list of strings, got " + x.dump());
    out.push_back(x.get<std::string>());
  }
  return out;
}

MachineFingerprint fingerprint_from_json(const nlohmann::json& j) {
  const nlohmann::json& f = field(j, "", "fingerprint");
  MachineFingerprint m;
  m.vendor = text(f, "fingerprint", "vendor");
  m.family = integer(f, "fingerprint", "family");
  m.model = integer(f, "fingerprint", "model");
  m.stepping = integer(f, "fingerprint", "stepping");
  m.isa_flags = texts(f, "fingerprint", "isa_flags");
  m.threads = integer(f, "fingerprint", "threads");
  m.llmport_version = text(f, "fingerprint", "llmport_version");
  // The id must be the id of its fields: a hand-edited or mixed-up file is damaged.
  if (f.contains("id") && text(f, "fingerprint", "id") != m.id())
    throw ConfigError("fingerprint.id: not the id of the fingerprint's fields (" + m.id() + ")");
  return m;
}

ProbePath path_from_json(const nlohmann::json& x, const std::string& where) {
  ProbePath q;
  q.op = text(x, where, "op");
  q.key = text(x, where, "key");
  q.value = key_value(field(x, where, "value"), where + ".value");
  q.name = text(x, where, "name");
  q.shape = text(x, where, "shape");
  q.config = registry_json::to_int_map(field(x, where, "config"), where + ".config");
  q.gflops = number(x, where, "gflops");
  if (!(q.gflops >= 0)) throw ConfigError(where + ".gflops: expected a rate >= 0");
  q.wait_share = number(x, where, "wait_share");
  if (!(q.wait_share >= 0)) throw ConfigError(where + ".wait_share: expected a share >= 0");
  return q;
}
}  // namespace

KernelProbe probe_from_json(const nlohmann::json& j) {
  if (text(j, "", "format") != kFormat) throw ConfigError("format: expected \"" + std::string(kFormat) + "\"");
  if (integer(j, "", "format_version") != kFormatVersion)
    throw ConfigError("format_version: expected " + std::to_string(kFormatVersion));
  KernelProbe p;
  p.machine = fingerprint_from_json(j);
  p.isa = text(j, "", "isa");
  p.measured_at = text(j, "", "measured_at");
  p.seconds = number(j, "", "seconds");
  const nlohmann::json& paths = field(j, "", "paths");
  if (!paths.is_array()) throw ConfigError("paths: expected a list, got " + std::string(paths.type_name()));
  for (std::size_t i = 0; i < paths.size(); ++i) p.paths.push_back(path_from_json(paths[i], fmt::format("paths[{}]", i)));
  const nlohmann::json& chosen = field(j, "", "chosen");
  if (!chosen.is_object()) throw ConfigError("chosen: expected an object, got " + std::string(chosen.type_name()));
  for (const auto& [op, c] : chosen.items()) {
    const std::string where = "chosen." + op;
    p.chosen[op] = {text(c, where, "key"), key_value(field(c, where, "value"), where + ".value"),
                    key_value(field(c, where, "isa_default"), where + ".isa_default")};
  }
  // What the file says was chosen must be what its own rates choose: a hand-edited file is
  // damaged, not obeyed.
  if (p.chosen != choose_defaults(p.paths, p.isa))
    throw ConfigError("chosen: does not follow from the measured paths");
  return p;
}

fs::path probe_cache_file(const fs::path& dir, const MachineFingerprint& m) {
  return dir / ("cpu_" + m.id() + ".json");
}

namespace {
// "" when the directory `file` goes in is one or can be made, else why not: the nearest
// existing ancestor is not a directory (LLMPORT_PROBE_CACHE naming a regular file).
std::string not_in_a_directory(const fs::path& file) {
  std::error_code ec;
  for (fs::path d = file.parent_path(); !d.empty(); d = d.parent_path()) {
    const fs::file_status st = fs::status(d, ec);
    if (fs::exists(st)) return fs::is_directory(st) ? "" : d.string() + " is not a directory";
    if (d == d.parent_path()) break;
  }
  return "";
}

// Why `file` is not a file that can be read and replaced ("" when it is one or is missing):
// a directory in its place is the user's, never replaced.
std::string not_a_file(const fs::path& file) {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  if (fs::is_directory(st)) return "is a directory, not a file";
  if (fs::exists(st) && !fs::is_regular_file(st)) return "is not a regular file";
  return "";
}
}  // namespace

KernelProbe load_or_probe(const ProbeRequest& req, ProbeSource* source) {
  ProbeSource src;
  if (req.cache_dir) src.file = probe_cache_file(*req.cache_dir, req.machine);
  const std::string no_dir = src.file ? not_in_a_directory(*src.file) : "";
  const std::string blocked = !no_dir.empty() ? no_dir : src.file ? not_a_file(*src.file) : "";
  if (!no_dir.empty())
    std::cerr << "warning: kernel probe cache " << src.file->string() << ": " << no_dir
              << "; the measurement serves this process only\n";
  else if (!blocked.empty())
    std::cerr << "warning: kernel probe cache " << src.file->string() << " " << blocked
              << "; it was not replaced, so the measurement serves this process only\n";
  if (src.file && blocked.empty() && !req.force) {
    try {
      if (auto cached = read_cache(*src.file, req)) {
        src.from_cache = true;
        if (source) *source = src;
        return *cached;
      }
    } catch (const ConfigError& e) {
      std::cerr << "warning: kernel probe cache " << src.file->string() << " is damaged (" << e.what()
                << "); measuring again\n";
    } catch (const std::exception&) {  // no cache trouble escapes, nor a library's wording
      std::cerr << "warning: kernel probe cache " << src.file->string()
                << " is damaged (its content is not a kernel probe); measuring again\n";
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
  const std::map<std::string, double> disturbed = disturbed_ops(p.paths);
  for (const auto& [op, share] : disturbed)
    std::cerr << fmt::format("warning: kernel probe: {} was timed while other work held the cores (threads "
                             "waited for a core {:.0f}% of the time, more than {:.0f}%); it keeps its ISA-flag "
                             "default and the probe is not cached, so the next run measures again\n",
                             op, 100 * share, 100 * kProbeMaxWaitShare);
  if (src.file && blocked.empty() && disturbed.empty()) {
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
