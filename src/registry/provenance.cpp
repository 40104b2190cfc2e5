// Provenance of a measurement: the machine fingerprint (src/kernels/machine_fingerprint.cpp),
// CPU model name, compiler, date.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kernels/cpuinfo.hpp"
#include "llmport/registry.hpp"
#include "registry/json_int.hpp"

namespace llmport {

MachineFingerprint fingerprint_from_json(const nlohmann::json& j) {
  MachineFingerprint f;
  f.vendor = j.at("vendor").get<std::string>();
  f.family = registry_json::to_int(j.at("family"), "fingerprint.family");
  f.model = registry_json::to_int(j.at("model"), "fingerprint.model");
  f.stepping = registry_json::to_int(j.at("stepping"), "fingerprint.stepping");
  f.isa_flags = j.at("isa_flags").get<std::vector<std::string>>();
  std::sort(f.isa_flags.begin(), f.isa_flags.end());
  f.threads = registry_json::to_int(j.at("threads"), "fingerprint.threads");
  f.llmport_version = j.at("llmport_version").get<std::string>();
  return f;
}

Provenance Provenance::current(int threads) {
  Provenance p;
  const CpuInfo& c = cpuinfo();
  p.cpu = c.model_name;
  for (const auto& f : c.flags) p.flags += (p.flags.empty() ? "" : " ") + f;
#if defined(__clang__)
  p.compiler = fmt::format("Clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  p.compiler = fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#endif
  p.llmport_version = LLMPORT_VERSION;
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  p.date = buf;
  // 0 means "all cores": record the count that ran.
  p.threads = resolved_threads(threads);
  p.fingerprint = MachineFingerprint::current(threads);
  return p;
}

}  // namespace llmport
