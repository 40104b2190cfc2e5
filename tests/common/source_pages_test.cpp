// release_source_pages (llmport/tensor.hpp) drops the file pages a weight was packed from.
// The kernel may map a whole 2 MiB page-cache folio on one fault, so the release spans the
// 2 MiB-aligned neighbourhood of the range, and never leaves the tensor's mapping. Checked on
// an anonymous mapping, where a dropped page reads back as zero: which bytes kept their
// pattern shows exactly which span was dropped.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "llmport/tensor.hpp"

namespace llmport {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// 8 MiB of 0xAB starting on a 2 MiB boundary (a 10 MiB anonymous mapping, trimmed by hand).
class PatternMap : public ::testing::Test {
 protected:
  void SetUp() override {
    raw_ = ::mmap(nullptr, kLen + 2 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(raw_, MAP_FAILED);
    const auto a = reinterpret_cast<std::uintptr_t>(raw_);
    base_ = reinterpret_cast<unsigned char*>((a + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB));
    std::memset(base_, 0xAB, kLen);
  }
  void TearDown() override { ::munmap(raw_, kLen + 2 * kMiB); }
  // A file-backed-looking view of [off, off + n) inside the mapping [m_off, m_off + m_len).
  TensorView view(std::size_t off, std::size_t n, std::size_t m_off, std::size_t m_len) const {
    TensorView v;
    v.name = "w";
    v.dtype = DType::BF16;
    v.shape = {static_cast<int64_t>(n / 2)};
    v.data = base_ + off;
    v.nbytes = n;
    v.file = "model.safetensors";
    v.map_base = base_ + m_off;
    v.map_len = m_len;
    return v;
  }
  bool kept(std::size_t off) const { return base_[off] == 0xAB; }
  bool dropped(std::size_t off) const { return base_[off] == 0; }

  static constexpr std::size_t kLen = 8 * kMiB;
  void* raw_ = nullptr;
  unsigned char* base_ = nullptr;
};

TEST_F(PatternMap, ASmallTensorDropsItsWhole2MiBNeighbourhood) {
  // A 1000-byte norm vector 100 bytes into the third 2 MiB span: the folio a fault on it may
  // map whole is [4, 6) MiB, every byte of which must go, and nothing outside it.
  release_source_pages(view(4 * kMiB + 100, 1000, 0, kLen), 0, 1000);
  EXPECT_TRUE(kept(4 * kMiB - 1));
  EXPECT_TRUE(dropped(4 * kMiB));
  EXPECT_TRUE(dropped(5 * kMiB));
  EXPECT_TRUE(dropped(6 * kMiB - 1));
  EXPECT_TRUE(kept(6 * kMiB));
}

TEST_F(PatternMap, APartOfATensorSpansTheFoliosItTouches) {
  // Bytes [1 MiB, 3 MiB) of a tensor that starts at 1.5 MiB: [2.5, 4.5) MiB of the mapping,
  // so the folios [2, 6) MiB.
  const std::size_t start = 3 * kMiB / 2;
  release_source_pages(view(start, 5 * kMiB, 0, kLen), kMiB, 2 * kMiB);
  EXPECT_TRUE(kept(2 * kMiB - 1));
  EXPECT_TRUE(dropped(2 * kMiB));
  EXPECT_TRUE(dropped(6 * kMiB - 1));
  EXPECT_TRUE(kept(6 * kMiB));
}

TEST_F(PatternMap, TheSpanIsClampedToTheMapping) {
  // The mapping is [2 MiB + 4 KiB, 3 MiB): the rounded span [2, 4) MiB must stop at its ends.
  const std::size_t m_off = 2 * kMiB + 4096, m_len = kMiB - 4096;
  release_source_pages(view(m_off + 100, 1000, m_off, m_len), 0, 1000);
  EXPECT_TRUE(kept(m_off - 1));
  EXPECT_TRUE(dropped(m_off));
  EXPECT_TRUE(dropped(3 * kMiB - 1));
  EXPECT_TRUE(kept(3 * kMiB));
}

TEST_F(PatternMap, WithoutMappingBoundsOnlyWholePagesInsideTheRangeGo) {
  TensorView v = view(4 * kMiB + 100, 3 * 4096, 0, kLen);
  v.map_base = nullptr;
  v.map_len = 0;
  release_source_pages(v, 0, v.nbytes);
  EXPECT_TRUE(kept(4 * kMiB + 4095));  // the partial first page stays
  EXPECT_TRUE(dropped(4 * kMiB + 4096));
  EXPECT_TRUE(dropped(4 * kMiB + 3 * 4096 - 1));
  EXPECT_TRUE(kept(4 * kMiB + 3 * 4096));  // the partial last page stays
}

TEST_F(PatternMap, HeapTensorsAndOutOfRangeRequestsAreLeftAlone) {
  TensorView heap = view(4 * kMiB, 2 * kMiB, 0, kLen);
  heap.file.clear();
  release_source_pages(heap, 0, heap.nbytes);
  EXPECT_TRUE(kept(4 * kMiB));
  const TensorView w = view(4 * kMiB, 2 * kMiB, 0, kLen);
  release_source_pages(w, kMiB, 2 * kMiB);  // runs past the tensor's end
  release_source_pages(w, 0, 0);
  release_source_pages(w, 1, std::numeric_limits<std::size_t>::max());  // off + len wraps around
  EXPECT_TRUE(kept(4 * kMiB));
  EXPECT_TRUE(kept(5 * kMiB));
  // A view whose data lies outside the mapping it names (a caller's bug) drops nothing.
  release_source_pages(view(4 * kMiB, 2 * kMiB, 0, 3 * kMiB), 0, 2 * kMiB);
  EXPECT_TRUE(kept(4 * kMiB));
  EXPECT_TRUE(kept(5 * kMiB));
}

}  // namespace
}  // namespace llmport
