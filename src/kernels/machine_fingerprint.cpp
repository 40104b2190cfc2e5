// The machine fingerprint: /proc/cpuinfo's vendor, family, model, stepping and the ISA
// flags that matter, the worker threads and the llmport version, and its stable id.
#include "llmport/machine_fingerprint.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kernels/cpuinfo.hpp"

namespace llmport {

namespace {

// The /proc/cpuinfo flags that change which kernel or tile config is fastest.
const std::set<std::string>& fingerprint_flags() {
  static const std::set<std::string> f = {"avx2",        "fma",         "f16c",     "avx512f",
                                          "avx512bw",    "avx512vl",    "avx512dq", "avx512_bf16",
                                          "avx512_fp16", "avx512_vnni", "amx_bf16", "amx_int8",
                                          "amx_tile"};
  return f;
}

int to_int(const std::string& v) {
  try {
    return std::stoi(v);
  } catch (...) {
    return -1;
  }
}

// First processor block of /proc/cpuinfo (x86 Linux field names).
CpuInfo read_cpuinfo() {
  CpuInfo c;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  bool have_flags = false;
  while (std::getline(in, line)) {
    const auto pos = line.find(':');
    if (pos == std::string::npos) continue;
    std::string key = line.substr(0, pos);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    const std::string val = pos + 2 <= line.size() ? line.substr(pos + 2) : "";
    if (key == "model name" && c.model_name.empty()) c.model_name = val;
    else if (key == "vendor_id" && c.vendor.empty()) c.vendor = val;
    else if (key == "cpu family" && c.family < 0) c.family = to_int(val);
    else if (key == "model" && c.model < 0) c.model = to_int(val);
    else if (key == "stepping" && c.stepping < 0) c.stepping = to_int(val);
    else if (key == "flags" && !have_flags) {
      have_flags = true;
      std::istringstream fs(val);
      std::string f;
      std::set<std::string> got;
      while (fs >> f)
        if (fingerprint_flags().count(f)) got.insert(f);
      c.flags.assign(got.begin(), got.end());
    }
  }
  if (c.vendor.empty()) c.vendor = "unknown-vendor";
  return c;
}

}  // namespace

const CpuInfo& cpuinfo() {
  static const CpuInfo c = read_cpuinfo();
  return c;
}

int resolved_threads(int threads) { return threads > 0 ? threads : std::max(1, omp_get_num_procs()); }

std::string MachineFingerprint::id() const {
  std::string canon = fmt::format("{}|{}|{}|{}|", vendor, family, model, stepping);
  for (const auto& f : isa_flags) canon += f + ",";
  canon += fmt::format("|{}|{}", threads, llmport_version);
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char ch : canon) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return fmt::format("fp-{:016x}", h);
}

std::string MachineFingerprint::describe() const {
  if (empty()) return "an unrecorded machine (no fingerprint)";
  std::string flags;
  for (const auto& f : isa_flags)
    if (f.rfind("avx512", 0) == 0 || f.rfind("amx", 0) == 0) flags += (flags.empty() ? "" : " ") + f;
  if (flags.empty()) flags = isa_flags.empty() ? "no AVX" : isa_flags.back();
  return fmt::format("{} family {} model {} stepping {} ({}, {} thread{}, llmport {})", vendor, family,
                     model, stepping, flags, threads, threads == 1 ? "" : "s", llmport_version);
}

MachineFingerprint MachineFingerprint::current(int threads) {
  const CpuInfo& c = cpuinfo();
  MachineFingerprint f;
  f.vendor = c.vendor;
  f.family = c.family;
  f.model = c.model;
  f.stepping = c.stepping;
  f.isa_flags = c.flags;
  f.threads = resolved_threads(threads);
  f.llmport_version = LLMPORT_VERSION;
  return f;
}

nlohmann::json to_json(const MachineFingerprint& f) {
  return {{"id", f.id()},           {"vendor", f.vendor},       {"family", f.family},
          {"model", f.model},       {"stepping", f.stepping},   {"isa_flags", f.isa_flags},
          {"threads", f.threads},   {"llmport_version", f.llmport_version}};
}

}  // namespace llmport
