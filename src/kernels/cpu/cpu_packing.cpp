// Packing linear weights into backend-owned 16-row panels (see PackedView): one conversion
// from the stored dtype to the compute dtype at load, source pages dropped as they are packed.
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"
#include "llmport/kernel_probe.hpp"
#include "llmport/op.hpp"

namespace llmport::cpu {

namespace {
PackedType packed_type(DType d) {
  switch (d) {
    case DType::BF16: return PackedType::BF16;
    case DType::F16: return PackedType::F16;
    case DType::F32: return PackedType::F32;
  }
  return PackedType::F32;
}

int padded_k(int k, DType d) { return d == DType::BF16 ? (k + 1) / 2 * 2 : k; }
}  // namespace

// The packed copy lives in backend memory; the source pages of a tensor in a file mapping
// are dropped from this process once packed, so a bf16 run holds ~1x the weights, not 2x.
// The mapping is read-only MAP_PRIVATE (SafetensorsFile), so MADV_DONTNEED only unmaps the
// pages: they stay in the page cache (a second run does not re-read the disk) and a later
// read (the embedding lookup of an untied table, a kernel-cache hash) faults them back in.
// Heap tensors (no file) are never touched: DONTNEED would zero them. Which span is dropped
// (the 2 MiB folios around a block, within the file's mapping): release_source_pages.
std::size_t packed_bytes(int n, int k, DType dtype) {
  const std::size_t panels = static_cast<std::size_t>((n + kPanel - 1) / kPanel);
  return panels * kPanel * padded_k(k, dtype) * dtype_size(dtype);
}

CpuLinear::CpuLinear(int n, int k, DType dt, const TileConfig& cfg) {
  n_out = n;
  n_in = k;
  dtype = dt;
  config = cfg;
  blk_ = blocking_from_config(cfg, dt);
  // The prefetch hint is the machine's unless the config names one (the probe measured it).
  if (!cfg.count(kPrefetchTileKey)) blk_.pf = probed_decode_prefetch();
  view_.type = packed_type(dt);
  view_.n = n;
  view_.k = k;
  view_.kp = padded_k(k, dt);
  view_.n_panels = (n + kPanel - 1) / kPanel;
  view_.panel_stride = static_cast<std::size_t>(kPanel) * view_.kp;
  nbytes_ = packed_bytes(n, k, dt);
  try {
    buf_ = PageBuffer(nbytes_);
  } catch (const std::bad_alloc&) {
    throw UsageError("cpu backend: out of memory packing a " + std::to_string(n) + "x" +
                     std::to_string(k) + " weight");
  }
  view_.data = buf_.data();
}

std::unique_ptr<CpuLinear> pack_linear(const TensorView& w, DType compute, const TileConfig& cfg,
                                       int threads) {
  if (w.shape.size() != 2 || w.shape[0] <= 0 || w.shape[1] <= 0)
    throw ShapeError("cpu backend: linear weight '" + w.name + "' must be 2-D [n_out, n_in]");
  const int n = static_cast<int>(w.shape[0]), k = static_cast<int>(w.shape[1]);
  auto lw = std::make_unique<CpuLinear>(n, k, compute, cfg);
  const PackedView& v = lw->view();
  const std::size_t src_esz = dtype_size(w.dtype);
  const char* src = static_cast<const char*>(w.data);
  void* dst = lw->data();
  const int nt = std::max(1, std::min(threads > 0 ? threads : omp_get_num_procs(), v.n_panels));
  // Blocks of panels, each block's source rows released as soon as it is packed: the peak
  // is the packed weights plus one block, not plus the largest tensor (a tied 150k-token
  // embedding is 300+ MB).
  constexpr int kBlockPanels = 64;
  for (int pb = 0; pb < v.n_panels; pb += kBlockPanels) {
    const int pe = std::min(v.n_panels, pb + kBlockPanels);
    if (w.dtype == compute) {
      // Same dtype: move the stored bits into panel order, no conversion.
      const std::size_t es = dtype_size(compute);
#pragma omp parallel for num_threads(nt) schedule(static)
      for (int p = pb; p < pe; ++p) {
        char* d = static_cast<char*>(dst) + static_cast<std::size_t>(p) * v.panel_stride * es;
        std::memset(d, 0, v.panel_stride * es);
        for (int c = 0; c < kPanel && p * kPanel + c < n; ++c) {
          const char* srow = src + static_cast<std::size_t>(p * kPanel + c) * k * es;
          if (compute == DType::BF16) {  // [kp/2][16][2]
            const uint16_t* s16 = reinterpret_cast<const uint16_t*>(srow);
            uint16_t* d16 = reinterpret_cast<uint16_t*>(d);
            for (int kk = 0; kk < k; ++kk)
              d16[(static_cast<std::size_t>(kk / 2) * kPanel + c) * 2 + (kk & 1)] = s16[kk];
          } else {  // [k][16]
            for (int kk = 0; kk < k; ++kk)
              std::memcpy(d + (static_cast<std::size_t>(kk) * kPanel + c) * es, srow + kk * es, es);
          }
        }
      }
    } else {
#pragma omp parallel num_threads(nt)
    {
      std::vector<float> row(static_cast<std::size_t>(v.kp) * kPanel, 0.0f);  // [16][kp] fp32
#pragma omp for schedule(static)
      for (int p = pb; p < pe; ++p) {
        std::fill(row.begin(), row.end(), 0.0f);
        for (int c = 0; c < kPanel; ++c) {
          const int r = p * kPanel + c;
          if (r >= n) break;
          to_f32(w.dtype, src + static_cast<std::size_t>(r) * k * src_esz,
                 row.data() + static_cast<std::size_t>(c) * v.kp, static_cast<std::size_t>(k));
        }
        const std::size_t base = static_cast<std::size_t>(p) * v.panel_stride;
        if (compute == DType::BF16) {
          uint16_t* d = static_cast<uint16_t*>(dst) + base;  // [kp/2][16][2]
          for (int kk = 0; kk < v.kp / 2; ++kk)
            for (int c = 0; c < kPanel; ++c)
              for (int e = 0; e < 2; ++e)
                d[(static_cast<std::size_t>(kk) * kPanel + c) * 2 + e] =
                    f32_to_bf16(row[static_cast<std::size_t>(c) * v.kp + 2 * kk + e]);
        } else if (compute == DType::F16) {
          uint16_t* d = static_cast<uint16_t*>(dst) + base;  // [k][16]
          for (int kk = 0; kk < v.kp; ++kk)
            for (int c = 0; c < kPanel; ++c)
              d[static_cast<std::size_t>(kk) * kPanel + c] =
                  f32_to_f16(row[static_cast<std::size_t>(c) * v.kp + kk]);
        } else {
          float* d = static_cast<float*>(dst) + base;  // [k][16]
          for (int kk = 0; kk < v.kp; ++kk)
            for (int c = 0; c < kPanel; ++c)
              d[static_cast<std::size_t>(kk) * kPanel + c] =
                  row[static_cast<std::size_t>(c) * v.kp + kk];
        }
      }
    }
    }
    const std::size_t row_bytes = static_cast<std::size_t>(k) * src_esz;
    const std::size_t r0 = static_cast<std::size_t>(pb) * kPanel;
    const std::size_t r1 = std::min<std::size_t>(static_cast<std::size_t>(n), static_cast<std::size_t>(pe) * kPanel);
    release_source_pages(w, r0 * row_bytes, (r1 - r0) * row_bytes);
  }
  return lw;
}

}  // namespace llmport::cpu
