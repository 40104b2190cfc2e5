#pragma once
// Kernel cache: packed weights written once per (weight content hash, kernel, tile
// config, dtype, llmport version) and read back into backend-owned memory on later runs.
// A changed weight (different bytes) or llmport version gives a different key, so a stale
// file is never used; no entry is keyed by a tensor name alone.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "llmport/kernels.hpp"

namespace llmport {

/// 64-bit content hash (xxHash64 round structure) of n bytes, as 16 hex digits.
std::string content_hash(const void* data, std::size_t n);

/// What one KernelCache::get_or_pack / get_or_quantize call did with its cache file.
struct CacheOutcome {
  bool hit = false;      ///< read back from the file
  bool written = false;  ///< packed, and the file written
  /// The file was there but damaged: why (e.g. "truncated: 90 bytes, expected 100"); it was
  /// repacked (and rewritten unless not_written says otherwise).
  std::string damaged;
  /// Packed but the file could not be written: why (e.g. a directory is in its place; it is
  /// never replaced). The freshly packed weight is returned and serves this process only.
  std::string not_written;
};

/// A directory of packed weights (e.g. <deployment>/kernel_cache/).
class KernelCache {
 public:
  explicit KernelCache(std::filesystem::path dir);
  /// Cache file name of `w` packed for `backend` in `dtype` with `cfg`:
  /// "<content hash>-<kernel key hash>.bin" where the kernel key covers backend, dtype,
  /// shape, config and llmport version.
  static std::string key(const TensorView& w, DType dtype, const TileConfig& cfg,
                         const std::string& backend);
  /// The packed weight from the cache when present and its header matches, else packs
  /// with `backend` and writes the file (atomically). Only backends with a packed byte
  /// layout (Backend::packed_size > 0: today "cpu") are cached; others pack directly.
  /// `*hit` tells which happened, `*outcome` also whether a miss was written. A file that
  /// cannot be written (a directory or other non-file in its place, an unwritable
  /// directory) is never replaced or deleted: the packed weight is still returned, and one
  /// stderr line per cache directory and process names the first such file and why. A
  /// damaged file (truncated, extended, another header, or any packed byte changed: the
  /// file ends with the packed bytes' 64-bit hash, checked on every read) gets one stderr
  /// line, "warning: kernel cache FILE was damaged (why); repacked", and is repacked and
  /// overwritten (once per process while the repack cannot be written). A file of an older format is repacked
  /// without a warning (stale, not damaged). After a write, the weight's packings for the
  /// same backend and dtype beyond the two most recently used (hits refresh a file's time)
  /// and its older-format files are removed; nothing else in the directory is.
  std::unique_ptr<LinearWeight> get_or_pack(Backend& backend, const TensorView& w, DType dtype,
                                            const TileConfig& cfg, bool* hit = nullptr,
                                            CacheOutcome* outcome = nullptr);
  /// Same for a weight block-quantized to `quant` (Backend::make_quantized_linear): the
  /// packed blocks are keyed by the source tensor's content, the format, the config (act)
  /// and the version, and read back through Backend::read_quantized_linear.
  std::unique_ptr<LinearWeight> get_or_quantize(Backend& backend, const TensorView& w, QuantType quant,
                                                const TileConfig& cfg, bool* hit = nullptr,
                                            CacheOutcome* outcome = nullptr);
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace llmport
