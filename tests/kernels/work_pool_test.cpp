// WorkPool: every chunk runs exactly once per run, slots are unique among concurrently
// running chunks, and results written by workers are visible to the caller on return.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "kernels/cpu/work_pool.hpp"

namespace llmport::cpu {
namespace {

TEST(WorkPool, EveryChunkRunsExactlyOnceAcrossManyRuns) {
  for (int threads : {1, 2, 3}) {
    WorkPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    std::vector<int> hits;
    for (int run = 0; run < 3000; ++run) {
      const int n = 1 + run % 37;  // includes n = 1 and n < threads
      hits.assign(n, 0);
      std::vector<std::atomic<int>> busy(threads);
      std::atomic<int> bad_slot{0};
      pool.run(n, [&](int c, int slot) {
        if (slot < 0 || slot >= threads || busy[slot].fetch_add(1) != 0) bad_slot.fetch_add(1);
        hits[c] += c + 1;  // plain write: the caller must see it after run() returns
        busy[slot].fetch_sub(1);
      });
      ASSERT_EQ(bad_slot.load(), 0) << "threads " << threads << " run " << run;
      for (int c = 0; c < n; ++c)
        ASSERT_EQ(hits[c], c + 1) << "threads " << threads << " run " << run << " chunk " << c;
    }
  }
}

TEST(WorkPool, ZeroChunksIsANoOp) {
  WorkPool pool(2);
  int calls = 0;
  pool.run(0, [&](int, int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace llmport::cpu
