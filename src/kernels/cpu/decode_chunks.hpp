#pragma once
// The chunks of a decode GEMV region (x is one row; one packed weight, or the q/k/v or
// gate/up group on the same x): contiguous panel ranges that the WorkPool's threads claim
// in index order. Every output column is computed whole by one micro-kernel call, so the
// cut changes which thread computes a column, never its value.
//
// Sizes are guided: chunk i holds ceil(remaining / (kGuidedDivisor * threads)) units of
// `group` panels, capped at the uniform size (total units / (kChunksPerThread * threads))
// and at least one unit. The early chunks therefore stay the uniform size (a descheduled
// thread holding one stalls the region no longer than before), and the last ones shrink to
// one unit, so the thread that finishes first waits for at most a unit instead of up to
// a uniform chunk. qwen3-0.6b tg128 on Zen 5 with 2 threads, rdtsc around the caller's
// join, three interleaved runs: the caller waited 16-20 k cycles (6-7 us) per q/k/v and
// gate/up region with uniform chunks, 7-9 k with guided ones; tokens/s moved within the
// run-to-run noise (0.88-0.93 of the read bound either way, at ~45 GB/s).
#include <array>
#include <span>

namespace llmport::cpu {

/// Panels [p0, p1) of weight `part` of the region.
struct PanelChunk {
  int part = 0;
  int p0 = 0;
  int p1 = 0;
};

class DecodeChunks {
 public:
  static constexpr int kChunksPerThread = 16;
  static constexpr int kGuidedDivisor = 4;
  static constexpr int kMaxChunks = 256;

  /// n_panels[i]: panels of weight i; group[i]: panels per unit of weight i (the GEMV's
  /// panel streams, >= 1); threads >= 1. Every panel of every weight lands in exactly one
  /// chunk; a chunk never spans two weights. UsageError when the spans differ in length.
  DecodeChunks(std::span<const int> n_panels, std::span<const int> group, int threads);

  int size() const { return n_; }
  const PanelChunk& operator[](int c) const { return chunks_[static_cast<std::size_t>(c)]; }

 private:
  std::array<PanelChunk, kMaxChunks> chunks_{};
  int n_ = 0;
};

}  // namespace llmport::cpu
