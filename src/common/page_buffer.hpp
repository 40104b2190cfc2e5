#pragma once
// Backend-owned memory for streamed data (packed weights, the KV cache): 64-byte aligned,
// and from 2 MiB on placed in 2 MiB-aligned anonymous memory advised MADV_HUGEPAGE, so that
// Linux's transparent huge pages (enabled = madvise on the machines measured) back it.
//
// Why: a decode step streams every weight once from DRAM. On 4 KiB pages each weight
// stream takes a TLB miss every 4 KiB and the hardware prefetchers stop at every page
// boundary. Measured on Zen 5 (qwen3-0.6b bf16, 2 threads, interleaved runs): the q/k/v
// GEMV group, whose k and v weights are exactly 2 MiB and fell under the former 4 MiB
// threshold, took 654-837 ms per 128 tokens on 4 KiB pages and 531-600 ms on huge pages
// (bench/results/2026-12-03_issue18_zen5_hugepages_attention.md).
#include <cstddef>

namespace llmport {

class PageBuffer {
 public:
  PageBuffer() = default;
  /// `bytes` zero-initialized bytes. From 2 MiB on they are the kernel's zero pages, so
  /// untouched memory costs no RSS until written; `fault_in` writes them now instead, after
  /// the huge-page advice (so the pages faulted are huge ones), for buffers whose first
  /// writes must not pay page faults (the KV cache: faulted lazily, they cost a 512-token
  /// qwen3-0.6b prefill 237 ms instead of 17 on a VM). Smaller buffers are always written
  /// (memset). Throws std::bad_alloc when the memory cannot be had.
  explicit PageBuffer(std::size_t bytes, bool fault_in = false);
  ~PageBuffer();
  PageBuffer(PageBuffer&& o) noexcept;
  PageBuffer& operator=(PageBuffer&& o) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  /// Whether the buffer was advised MADV_HUGEPAGE (>= kHugeThreshold bytes).
  bool huge() const { return map_ != nullptr; }

  /// Size from which a buffer is 2 MiB aligned and advised MADV_HUGEPAGE: one huge page.
  static constexpr std::size_t kHugeThreshold = std::size_t{2} << 20;

 private:
  void release() noexcept;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  void* map_ = nullptr;      // the mmap'd region (huge buffers), else null
  std::size_t map_len_ = 0;  // its length
};

}  // namespace llmport
