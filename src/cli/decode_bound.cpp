#include "cli/decode_bound.hpp"

namespace llmport::cli {

double segmented_bound_tps(const std::vector<DecodeSegment>& segments) {
  double tokens = 0, ideal_s = 0;
  for (const DecodeSegment& s : segments) {
    if (s.bound_tps <= 0) return 0;
    tokens += s.tokens;
    ideal_s += s.tokens / s.bound_tps;
  }
  return ideal_s > 0 ? tokens / ideal_s : 0;
}

std::vector<int> segment_starts(int n_gen) {
  const int n = (n_gen + kBoundSegmentTokens - 1) / kBoundSegmentTokens;
  std::vector<int> starts;
  for (int s = 0; s <= n; ++s) starts.push_back(static_cast<int>(static_cast<long long>(n_gen) * s / n));
  return starts;
}

}  // namespace llmport::cli
