#include "cli/version.hpp"

#include "llmport/build_info.hpp"
#include "llmport/data_dir.hpp"
#include "llmport/error.hpp"
#include "llmport/kernels.hpp"

namespace llmport::cli {

namespace {
std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}
}  // namespace

std::string version_text() {
  const BuildInfo b = build_info();
  std::string s = "llmport " + b.version + "\n";
  s += "git commit: " + b.git_commit + "\n";
  s += "compiler: " + b.compiler + "\n";
  s += "build type: " + b.build_type + (b.shared ? " (shared libllmport)" : " (static libllmport)") + "\n";
  s += "cpu ISA levels built in: " + joined(backend_built_levels("cpu")) + "\n";
  s += "cpu ISA levels this machine runs: " + joined(backend_levels("cpu")) + "\n";
  // --version answers even without data: the lookup failure is the line's content.
  try {
    const DataDirCandidate d = find_data_dir();
    s += "data dir: " + d.path.string() + " (" + d.origin + ")";
  } catch (const Error& e) {
    s += std::string("data dir: none: ") + e.what();
  }
  return s;
}

}  // namespace llmport::cli
