#include "kernels/cpu/cache_topology.hpp"

#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace llmport::cpu {

namespace {

std::string read_line(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// "32768K" -> 33554432; 0 for anything else.
std::size_t parse_size(const std::string& s) {
  std::size_t i = 0, v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && v < (std::size_t{1} << 50))
    v = v * 10 + static_cast<std::size_t>(s[i++] - '0');
  if (i == 0) return 0;
  const std::string unit = s.substr(i);
  if (unit.empty()) return v;
  if (unit == "K") return v << 10;
  if (unit == "M") return v << 20;
  if (unit == "G") return v << 30;
  return 0;
}

}  // namespace

std::size_t l3_bytes_of(const std::filesystem::path& root, std::span<const int> cpus) {
  std::set<std::string> seen;
  std::size_t total = 0;
  std::error_code ec;
  for (int cpu : cpus) {
    const std::filesystem::path cache = root / ("cpu" + std::to_string(cpu)) / "cache";
    for (std::filesystem::directory_iterator it(cache, ec), end; !ec && it != end; it.increment(ec)) {
      const std::filesystem::path d = it->path();
      if (d.filename().string().rfind("index", 0) != 0 || read_line(d / "level") != "3") continue;
      std::string key = read_line(d / "id");
      key = key.empty() ? "cpus " + read_line(d / "shared_cpu_list") : "id " + key;
      if (seen.insert(key).second) total += parse_size(read_line(d / "size"));
    }
    ec.clear();
  }
  return total;
}

std::size_t l3_bytes_this_process() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (const std::size_t b = l3_bytes_of("/sys/devices/system/cpu", cpus); b > 0) return b;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? static_cast<std::size_t>(l3) : 0;
}

}  // namespace llmport::cpu
