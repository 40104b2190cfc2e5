#pragma once
// The chunks of a decode GEMV region (x is one row; one packed weight, or the q/k/v or
// gate/up group on the same x): contiguous panel ranges that the WorkPool's threads claim
// in index order. Every output column is computed whole by one micro-kernel call, so the
// cut changes which thread computes a column, never its value.
//
// Sizes are guided (OpenMP's schedule(guided)): chunk i holds ceil(remaining /
// (kGuidedDivisor * threads)) units of `group` panels, at least one, so with 2 threads the
// first chunk is 1/8 of the region and the last ones shrink to one unit: the thread that
// finishes first waits for at most a unit. Large early chunks matter because the GEMV runs
// a chunk's panel streams through the whole chunk (linear_avx512_impl.inc run_gemv): a
// longer chunk is fewer cold stream starts. Until session 23 the size was also capped at a
// uniform 1/16 of each thread's share (a descheduled thread holding a chunk stalls the
// region less), which kept qwen3-0.6b's chunks at 1-3 units; without the cap, on Zen 4 at
// ~60 GB/s, BM_GemvFromDram 3072 x 1024 rose from 0.87 to 0.93-0.95 of the read bound and
// qwen3-0.6b tg128 from 0.84-0.87 to 0.90-0.92 (interleaved runs; at ~35 GB/s both were
// within noise, 0.95-0.98), bench/results/2026-12-06s23_issue18_zen4_three_shapes.md.
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
