#include "llmport/tensor.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

namespace llmport {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

bool TensorView::contiguous() const {
  if (strides.empty()) return true;
  if (strides.size() != shape.size()) return false;
  int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != s) return false;
    s *= shape[i];
  }
  return true;
}

TensorView TensorView::f32(const float* data, int64_t rows, int64_t cols, std::string name) {
  TensorView v;
  v.name = std::move(name);
  v.dtype = DType::F32;
  v.shape = {rows, cols};
  v.data = data;
  v.nbytes = static_cast<std::size_t>(rows * cols) * sizeof(float);
  return v;
}

void release_source_pages(const TensorView& w, std::size_t off, std::size_t len) {
  if (w.file.empty() || len == 0 || len > w.nbytes || off > w.nbytes - len) return;
  const std::uintptr_t b = reinterpret_cast<std::uintptr_t>(w.data) + off, e = b + len;
  std::uintptr_t lo = 0, hi = 0;
  const auto m0 = reinterpret_cast<std::uintptr_t>(w.map_base), m1 = m0 + w.map_len;
  if (w.map_base) {
    // A range outside the mapping it claims is a caller's bug: dropping it could zero
    // anonymous memory, so nothing is dropped.
    if (b < m0 || e > m1) return;
    constexpr std::uintptr_t kFolio = std::uintptr_t{2} << 20;  // largest page-cache folio (PMD)
    lo = std::max(m0, b / kFolio * kFolio);
    hi = std::min(m1, (e + kFolio - 1) / kFolio * kFolio);
  } else {
    constexpr std::uintptr_t kPage = 4096;  // no bounds known: only pages wholly inside
    lo = (b + kPage - 1) / kPage * kPage;
    hi = e / kPage * kPage;
  }
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

std::size_t touch_source_pages(const TensorView& w) {
  if (w.file.empty() || w.nbytes == 0) return 0;
  const std::size_t page = 4096;
  const auto* p = static_cast<const volatile unsigned char*>(w.data);
  unsigned char sink = 0;
  std::size_t n = 0;
  // The first byte of each page the tensor covers (its first and last page may be partial).
  const std::size_t head = page - reinterpret_cast<std::uintptr_t>(w.data) % page;
  sink ^= p[0];
  ++n;
  for (std::size_t off = head; off < w.nbytes; off += page, ++n) sink ^= p[off];
  (void)sink;
  return n;
}

}  // namespace llmport
