// PageBuffer (src/common/page_buffer.hpp): the memory of packed weights and the KV cache.
// A buffer of >= 2 MiB must start on a 2 MiB boundary and carry the kernel's huge-page
// advice (VmFlags "hg" in /proc/self/smaps), smaller ones 64-byte alignment; all zeroed.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/page_buffer.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

std::string vm_flags_of(const void* p) { return test::smaps_line(p, "VmFlags:"); }

bool all_zero(const PageBuffer& b) {
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b.data()[i] != std::byte{0}) return false;
  return true;
}

TEST(PageBuffer, SmallBuffersAre64ByteAlignedZeroedAndNotHuge) {
  for (std::size_t n : {std::size_t{1}, std::size_t{100}, std::size_t{4096},
                        PageBuffer::kHugeThreshold - 1}) {
    PageBuffer b(n);
    EXPECT_EQ(b.size(), n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u) << n;
    EXPECT_FALSE(b.huge()) << n;
    EXPECT_TRUE(all_zero(b)) << n;
  }
}

TEST(PageBuffer, FromTwoMiBOnBuffersStartOnAHugePageAndCarryTheHugePageAdvice) {
  const bool thp = std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled");
  // Exactly one huge page (the k and v weights of qwen3-0.6b and llama-3.2-1b), and sizes
  // that end inside a huge page and inside a 4 KiB page.
  for (std::size_t n : {PageBuffer::kHugeThreshold, (std::size_t{5} << 20) + 4096,
                        (std::size_t{3} << 20) + 123}) {
    PageBuffer b(n);
    EXPECT_EQ(b.size(), n);
    EXPECT_TRUE(b.huge()) << n;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % PageBuffer::kHugeThreshold, 0u) << n;
    EXPECT_TRUE(all_zero(b)) << n;
    b.data()[n - 1] = std::byte{7};  // the whole size is writable
    if (thp) {
      const std::string flags = vm_flags_of(b.data());
      EXPECT_NE(flags.find(" hg"), std::string::npos) << n << ": " << flags;
      EXPECT_NE(vm_flags_of(b.data() + n - 1).find(" hg"), std::string::npos) << n;
    }
  }
}

// Pages of [p, p + n) resident in memory (mincore), out of how many.
std::pair<std::size_t, std::size_t> resident_pages(const std::byte* p, std::size_t n) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t count = (n + page - 1) / page;
  std::vector<unsigned char> vec(count);
  if (::mincore(const_cast<std::byte*>(p), n, vec.data()) != 0) return {0, 0};
  std::size_t in = 0;
  for (unsigned char v : vec) in += v & 1u;
  return {in, count};
}

// The KV cache asks for its pages now (fault_in) so that no page fault lands in a forward
// pass; weights are written by packing and are left to fault lazily.
TEST(PageBuffer, FaultInMakesEveryPageResidentAndLazyBuffersStayUntouched) {
  const std::size_t n = (std::size_t{4} << 20) + 4096;
  PageBuffer lazy(n), faulted(n, /*fault_in=*/true);
  const auto [lazy_in, lazy_total] = resident_pages(lazy.data(), n);
  const auto [in, total] = resident_pages(faulted.data(), n);
  ASSERT_GT(total, 0u);
  EXPECT_EQ(in, total);
  EXPECT_EQ(lazy_in, 0u) << "of " << lazy_total;
  EXPECT_TRUE(all_zero(faulted));
}

TEST(PageBuffer, MovingHandsTheMemoryOver) {
  PageBuffer a(PageBuffer::kHugeThreshold);
  std::byte* p = a.data();
  p[10] = std::byte{3};
  PageBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[10], std::byte{3});
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(a.size(), 0u);
  PageBuffer c(64);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_TRUE(c.huge());
}

}  // namespace
}  // namespace llmport
