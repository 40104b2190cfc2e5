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
  /// Product of the shape (1 for a scalar).
  int64_t numel() const;
  /// True when `strides` is empty or equals the row-major strides of `shape`.
  bool contiguous() const;
  /// A contiguous fp32 view of `data` [rows, cols] named `name` (tests, op harness).
  static TensorView f32(const float* data, int64_t rows, int64_t cols, std::string name = "f32");
};

/// Drops the pages of bytes [off, off + len) of `w` from this process when `w` lives in a
/// read-only file mapping (w.file set): MADV_DONTNEED on whole pages; the page cache keeps
/// them and a later read faults them back in. No effect on heap tensors (w.file empty).
/// Packing and hashing a 2 GB model this way never makes the file resident beside its copy.
void release_source_pages(const TensorView& w, std::size_t off, std::size_t len);

/// Reads every page of `w` into this process when `w` lives in a file mapping (w.file set):
/// one read per 4 KiB page, so a file the page cache does not hold is read from disk now,
/// not one page at a time later. The embedding table of an untied model is looked up in
/// place, one row per new token: cold, each lookup was a disk read (tinyllama-1.1b from a
/// cold cache: 4.7 ms per decode token, 7% of it). Returns the pages touched (0 for a heap
/// tensor).
std::size_t touch_source_pages(const TensorView& w);

}  // namespace llmport
