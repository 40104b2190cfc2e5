#pragma once
// The read bound of one `bench` tg repetition, measured in segments. This VM's memory
// bandwidth moves by up to 2x within a 4 s repetition, so a bound measured only before and
// after it judges tokens decoded at one bandwidth against another. `bench` re-measures the
// bound every few tokens (untimed) and bounds each segment by the measurements around it.
#include <vector>

namespace llmport::cli {

/// Tokens decoded between two bound measurements.
struct DecodeSegment {
  int tokens = 0;         ///< decode steps in the segment
  double seconds = 0;     ///< their wall time [s] (the bound measurements excluded)
  double bound_tps = 0;   ///< the segment's bound [tokens/s]: the larger of the two around it
};

/// The repetition's bound [tokens/s]: its tokens over the time they take when every segment
/// runs at its own bound, sum(tokens) / sum(tokens_s / bound_s). The repetition's tokens/s
/// over this is sum(tokens_s / bound_s) / sum(seconds_s): ideal time over measured time.
/// Returns 0 when a segment has no bound (bound_tps <= 0) or there are no tokens.
double segmented_bound_tps(const std::vector<DecodeSegment>& segments);

/// Segment length [tokens] that `bench` uses: n_gen in ceil(n_gen / kBoundSegmentTokens)
/// equal segments (tg128: 4 x 32, one bound measurement per ~1 s at 30 tokens/s).
inline constexpr int kBoundSegmentTokens = 32;

/// The first decode step of each segment of an n_gen repetition, and n_gen at the end:
/// ceil(n_gen / kBoundSegmentTokens) segments of equal length (+-1). n_gen >= 1.
std::vector<int> segment_starts(int n_gen);

}  // namespace llmport::cli
