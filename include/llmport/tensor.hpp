#pragma once
// The base level every module shares: a typed, strided, read-only view of a tensor. Kernels
// take these (and raw fp32 activations); they never depend on the model loader.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "llmport/dtype.hpp"

namespace llmport {

/// A read-only view of one tensor: dtype, shape and strides over memory someone else owns
/// (a safetensors mmap, a test's vector). Row-major and contiguous unless `strides` says
/// otherwise; today every producer makes contiguous views and every kernel requires them.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;    ///< e.g. q_proj: [n_heads*head_dim, emb_dim]
  const void* data = nullptr;  ///< valid while the owner lives (WeightStore: its mmaps)
  std::size_t nbytes = 0;
  std::filesystem::path file;  ///< file it lives in (error messages); empty for heap memory
  /// Elements between consecutive indices of each dimension; empty = contiguous row-major.
  std::vector<int64_t> strides;
  /// The whole read-only file mapping `data` lies in (WeightStore's mmap of `file`), or null
  /// and 0 for heap memory: the bounds within which release_source_pages may drop pages.
  const void* map_base = nullptr;
  std::size_t map_len = 0;
  /// Product of the shape (1 for a scalar).
  int64_t numel() const;
  /// True when `strides` is empty or equals the row-major strides of `shape`.
  bool contiguous() const;
  /// A contiguous fp32 view of `data` [rows, cols] named `name` (tests, op harness).
  static TensorView f32(const float* data, int64_t rows, int64_t cols, std::string name = "f32");
};

/// Drops bytes [off, off + len) of `w` from this process when `w` lives in a read-only file
/// mapping (w.file and w.map_base set): MADV_DONTNEED on the 2 MiB-aligned span around them,
/// clamped to the mapping. The span is rounded outward because the kernel may map a whole
/// 2 MiB page-cache folio on one fault (seen on Linux 6.18 / ext4: reading a 4 KiB norm
/// vector left its 2 MiB neighbourhood of already-packed weights resident), and a page
/// shared with a neighbouring tensor must go too. Dropping more than asked is harmless: the
/// mapping is read-only, the page cache keeps the data, a later read faults it back in.
/// Packing and hashing a 2 GB model this way never makes the file resident beside its copy.
/// No effect on heap tensors, with `off + len > w.nbytes`, or for a range outside the
/// view's map bounds; a view without map bounds drops only the whole 4 KiB pages inside the
/// range.
void release_source_pages(const TensorView& w, std::size_t off, std::size_t len);

/// Reads every page of `w` into this process when `w` lives in a file mapping (w.file set):
/// one read per 4 KiB page, so a file the page cache does not hold is read from disk now,
/// not one page at a time later. The embedding table of an untied model is looked up in
/// place, one row per new token: cold, each lookup was a disk read (tinyllama-1.1b from a
/// cold cache: 4.7 ms per decode token, 7% of it). Returns the pages touched (0 for a heap
/// tensor).
std::size_t touch_source_pages(const TensorView& w);

}  // namespace llmport
