#include "support/reference_process.hpp"

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "support/test_support.hpp"

namespace llmport::test {
namespace {
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

std::vector<std::string> run_reference(const std::vector<std::string>& argv) {
  TempDir t;
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + shell_quote(a);
  const std::string full = cmd + " > " + shell_quote((t.path() / "out").string()) + " 2> " +
                           shell_quote((t.path() / "err").string());
  if (std::system(full.c_str()) != 0) throw std::runtime_error(cmd + " failed: " + read_file(t.path() / "err"));
  std::vector<std::string> lines;
  std::istringstream in(read_file(t.path() / "out"));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string node_script(const std::string& module, const std::string& package, const std::string& script) {
  const std::filesystem::path dir = std::filesystem::path(LLMPORT_SOURCE_DIR) / "tests" / module / "node";
  if (!std::filesystem::exists(dir / "node_modules" / package))
    throw std::runtime_error("no " + package + " under " + dir.string() + ": run `npm ci` there (.ci/run does)");
  return (dir / script).string();
}

std::string python_with(const std::string& module, const std::string& debian_package) {
  for (const std::string py : {"python3", "/usr/bin/python3"}) {
    const std::string probe = shell_quote(py) + " -c " + shell_quote("import " + module) + " > /dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return py;
  }
  throw std::runtime_error("no python3 that imports " + module + ": install " + debian_package +
                           " (scripts/install-deps.sh does)");
}

}  // namespace llmport::test
