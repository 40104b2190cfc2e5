// Provenance of a measurement: CPU model and flags, compiler, version, date.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "llmport/registry.hpp"

namespace llmport {

Provenance Provenance::current(int threads) {
  Provenance p;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> wanted = {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                                  "avx512dq", "avx512_bf16", "avx512_fp16", "amx_bf16"};
  while (std::getline(in, line)) {
    if (p.cpu.empty() && line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) p.cpu = line.substr(pos + 2);
    } else if (p.flags.empty() && line.rfind("flags", 0) == 0) {
      std::istringstream fs(line.substr(line.find(':') + 1));
      std::string f;
      while (fs >> f)
        if (wanted.count(f)) p.flags += (p.flags.empty() ? "" : " ") + f;
    }
  }
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
  p.threads = threads > 0 ? threads : std::max(1, omp_get_num_procs());
  return p;
}

}  // namespace llmport
