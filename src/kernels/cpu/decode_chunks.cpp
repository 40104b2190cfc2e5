#include "kernels/cpu/decode_chunks.hpp"

#include <algorithm>

#include "llmport/error.hpp"

namespace llmport::cpu {

DecodeChunks::DecodeChunks(std::span<const int> n_panels, std::span<const int> group, int threads) {
  if (n_panels.size() != group.size())
    throw UsageError("decode chunks: " + std::to_string(n_panels.size()) + " weights but " +
                     std::to_string(group.size()) + " group sizes");
  const long nt = std::max(1, threads);
  long remaining = 0;  // units of all weights not yet in a chunk
  for (std::size_t i = 0; i < n_panels.size(); ++i) {
    const int g = std::max(1, group[i]);
    remaining += (std::max(0, n_panels[i]) + g - 1) / g;
  }
  for (std::size_t i = 0; i < n_panels.size(); ++i) {
    const int g = std::max(1, group[i]), panels = std::max(0, n_panels[i]);
    for (int p = 0; p < panels;) {
      const long guided = (remaining + kGuidedDivisor * nt - 1) / (kGuidedDivisor * nt);
      long units = std::max(1L, guided);
      // The last slot takes whatever is left of every weight, chunk by weight.
      if (n_ >= kMaxChunks - static_cast<int>(n_panels.size() - i)) units = remaining;
      const int p1 = static_cast<int>(std::min<long>(panels, p + units * g));
      chunks_[static_cast<std::size_t>(n_++)] = {static_cast<int>(i), p, p1};
      remaining -= (p1 - p + g - 1) / g;
      p = p1;
    }
  }
}

}  // namespace llmport::cpu
