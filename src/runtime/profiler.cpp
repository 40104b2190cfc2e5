#include "runtime/profiler.hpp"

#include <algorithm>

namespace llmport {

std::vector<OpProfile> Profiler::report() const {
  std::vector<OpProfile> out;
  for (const auto& [op, e] : ops_) out.push_back({op, e.ms, e.calls});
  std::sort(out.begin(), out.end(), [](const OpProfile& a, const OpProfile& b) {
    return a.ms != b.ms ? a.ms > b.ms : a.op < b.op;
  });
  return out;
}

}  // namespace llmport
