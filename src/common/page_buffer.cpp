#include "common/page_buffer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace llmport {

namespace {
constexpr std::size_t kHuge = PageBuffer::kHugeThreshold;
constexpr std::size_t kPage = 4096;
std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
}  // namespace

PageBuffer::PageBuffer(std::size_t bytes, bool fault_in) : size_(bytes) {
  if (bytes < kHuge) {
    // aligned_alloc needs a size that is a multiple of the alignment.
    data_ = static_cast<std::byte*>(std::aligned_alloc(64, round_up(std::max<std::size_t>(bytes, 1), 64)));
    if (!data_) throw std::bad_alloc();
    std::memset(data_, 0, bytes);
    return;
  }
  // Over-map by one huge page, then unmap the unaligned head and the tail beyond the last
  // 4 KiB page, so the kernel can back every whole 2 MiB of the buffer with a huge page
  // (the last partial 2 MiB stays on 4 KiB pages).
  if (bytes > SIZE_MAX - kHuge - kPage) throw std::bad_alloc();  // the rounding below would wrap
  const std::size_t want = round_up(bytes, kPage);
  const std::size_t len = want + kHuge;
  void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t aligned = round_up(base, kHuge);
  if (aligned > base) ::munmap(m, aligned - base);
  const std::size_t tail = (base + len) - (aligned + want);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + want), tail);
  map_ = reinterpret_cast<void*>(aligned);
  map_len_ = want;
  data_ = reinterpret_cast<std::byte*>(aligned);
  ::madvise(map_, map_len_, MADV_HUGEPAGE);  // a hint: without THP the buffer still works
  if (fault_in) std::memset(data_, 0, map_len_);
}

PageBuffer::~PageBuffer() { release(); }

PageBuffer::PageBuffer(PageBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
      map_(std::exchange(o.map_, nullptr)), map_len_(std::exchange(o.map_len_, 0)) {}

PageBuffer& PageBuffer::operator=(PageBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    map_ = std::exchange(o.map_, nullptr);
    map_len_ = std::exchange(o.map_len_, 0);
  }
  return *this;
}

void PageBuffer::release() noexcept {
  if (map_) ::munmap(map_, map_len_);
  else std::free(data_);
  data_ = nullptr;
  map_ = nullptr;
  size_ = map_len_ = 0;
}

}  // namespace llmport
