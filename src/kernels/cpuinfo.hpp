#pragma once
// The first processor block of /proc/cpuinfo, read once per process: the machine
// fingerprint (llmport/machine_fingerprint.hpp) and the registry's provenance use it.
#include <string>
#include <vector>

namespace llmport {

struct CpuInfo {
  std::string model_name, vendor;  ///< vendor "unknown-vendor" when /proc/cpuinfo has none
  int family = -1, model = -1, stepping = -1;
  std::vector<std::string> flags;  ///< the fingerprint's flags present, sorted
};

/// This machine's (read at the first call).
const CpuInfo& cpuinfo();

/// `threads`, or the processor count when 0 (what a backend made with 0 runs).
int resolved_threads(int threads);

}  // namespace llmport
