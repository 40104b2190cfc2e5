// PageBuffer (src/common/page_buffer.hpp): the memory of packed weights and the KV cache.
// A buffer of >= 2 MiB must start on a 2 MiB boundary and carry the kernel's huge-page
// advice (VmFlags "hg" in /proc/self/smaps), smaller ones 64-byte alignment; all zeroed.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/page_buffer.hpp"

namespace llmport {
namespace {

// The VmFlags line of the mapping of /proc/self/smaps that contains `p`, or "".
std::string vm_flags_of(const void* p) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

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
