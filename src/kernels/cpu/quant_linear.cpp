// CpuQuantLinear storage, quantization from the checkpoint (rows on all threads), the q8
// activation blocks, and the per-level kernel choice.
#include "kernels/cpu/quant_linear.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "llmport/error.hpp"

namespace llmport::cpu {

void check_quant_tiles(const TileConfig& cfg) {
  for (const auto& [key, val] : cfg) {
    if (key != kActTileKey)
      throw UsageError("cpu tile config: unknown parameter '" + key + "' for a quantized linear (expected act)");
    if (val != 0 && val != 1)
      throw UsageError("cpu tile config: 'act' must be 0 (fp32 activations) or 1 (q8 blocks) (got " +
                       std::to_string(val) + ")");
  }
}

CpuQuantLinear::CpuQuantLinear(int n, int k, QuantType q, const TileConfig& cfg) {
  n_out = n;
  n_in = k;
  dtype = DType::F32;  // the dequantized values and fp32 activations
  quant = q;
  set_config(cfg);
  panel_block_bytes_ = kPanelScaleBytes + panel_quant_bytes(q);
  data_ = PageBuffer(packed_bytes(n, k, q));  // zeroed
}

std::size_t CpuQuantLinear::packed_bytes(int n, int k, QuantType q) noexcept {
  const std::size_t panels = (static_cast<std::size_t>(n) + kQuantPanel - 1) / kQuantPanel;
  return panels * static_cast<std::size_t>(k / kQuantBlock) * (kPanelScaleBytes + panel_quant_bytes(q));
}

namespace {
// Byte offset, inside a panel block's quants, of ggml quant byte `e` of column c: groups of
// four bytes, 16 columns per group (the layout in quant_linear.hpp).
constexpr std::size_t panel_quant_offset(int c, int e) {
  return static_cast<std::size_t>((e / 4) * kQuantPanel + c) * 4 + e % 4;
}
}  // namespace

void CpuQuantLinear::set_row(int j, const void* blocks) {
  const int p = j / kQuantPanel, c = j % kQuantPanel;
  for (int b = 0; b < n_blocks(); ++b) {
    std::byte* pb = panel_block_mut(p, b);
    auto* d = reinterpret_cast<uint16_t*>(pb);
    auto* qs = reinterpret_cast<uint8_t*>(pb + kPanelScaleBytes);
    if (quant == QuantType::Q8_0) {
      const BlockQ8_0& blk = static_cast<const BlockQ8_0*>(blocks)[b];
      d[c] = blk.d;
      for (int e = 0; e < kQuantBlock; ++e)
        qs[panel_quant_offset(c, e)] = static_cast<uint8_t>(static_cast<uint8_t>(blk.qs[e]) ^ 0x80u);  // q + 128
    } else {
      const BlockQ4_0& blk = static_cast<const BlockQ4_0*>(blocks)[b];
      d[c] = blk.d;
      for (int e = 0; e < kQuantBlock / 2; ++e) qs[panel_quant_offset(c, e)] = blk.qs[e];
    }
  }
}

void CpuQuantLinear::get_row(int j, void* blocks) const {
  const int p = j / kQuantPanel, c = j % kQuantPanel;
  for (int b = 0; b < n_blocks(); ++b) {
    const std::byte* pb = panel_block(p, b);
    const auto* d = reinterpret_cast<const uint16_t*>(pb);
    const auto* qs = reinterpret_cast<const uint8_t*>(pb + kPanelScaleBytes);
    if (quant == QuantType::Q8_0) {
      BlockQ8_0& blk = static_cast<BlockQ8_0*>(blocks)[b];
      blk.d = d[c];
      for (int e = 0; e < kQuantBlock; ++e) blk.qs[e] = static_cast<int8_t>(qs[panel_quant_offset(c, e)] ^ 0x80u);
    } else {
      BlockQ4_0& blk = static_cast<BlockQ4_0*>(blocks)[b];
      blk.d = d[c];
      for (int e = 0; e < kQuantBlock / 2; ++e) blk.qs[e] = qs[panel_quant_offset(c, e)];
    }
  }
}

void CpuQuantLinear::set_config(const TileConfig& cfg) {
  check_quant_tiles(cfg);
  config = cfg;
  act_ = act_of(cfg);
}

void quantize_act_rows(const float* x, int r0, int r1, int k, int8_t* q, float* d, int32_t* s) {
  const int nb = k / kQuantBlock;
  // x * id + 1.5 * 2^23 - 1.5 * 2^23 rounds half to even for |v| <= 2^22 (here <= 127) in
  // plain SSE2 code, which vectorizes where a call to nearbyintf would not.
  constexpr float kMagic = 12582912.0f;
  for (int i = r0; i < r1; ++i)
    for (int b = 0; b < nb; ++b) {
      const std::size_t off = static_cast<std::size_t>(i) * k + static_cast<std::size_t>(b) * kQuantBlock;
      float amax = 0, probe = 0;
      for (int t = 0; t < kQuantBlock; ++t) {
        amax = std::max(amax, std::abs(x[off + t]));  // drops a NaN: probe catches it
        probe += x[off + t] * 0.0f;                   // NaN iff the block holds a NaN or Inf
      }
      const std::size_t bi = static_cast<std::size_t>(i) * nb + b;
      if (probe != probe) {
        // Converting a NaN to an integer is undefined (x86 gives 0): the block would turn
        // into zeros and a NaN activation would vanish from the output. A NaN scale with
        // zero quants makes every output that reads the block NaN, as the fp32 path does.
        std::fill(q + off, q + off + kQuantBlock, int8_t{0});
        d[bi] = std::numeric_limits<float>::quiet_NaN();
        s[bi] = 0;
        continue;
      }
      const float db = amax / 127.0f;
      const float id = db != 0.0f ? 1.0f / db : 0.0f;
      // amax below ~3.7e-37: 1 / db overflows to inf and x * id is inf or NaN; x / db is
      // the same quotient, finite (|x / db| <= 127).
      const bool tiny = std::isinf(id);
      int32_t sum = 0;
      for (int t = 0; t < kQuantBlock; ++t) {
        // Without -ffast-math the compiler may neither reassociate nor (no FMA in generic
        // x86-64 code) contract this.
        const float v = (tiny ? x[off + t] / db : x[off + t] * id) + kMagic;
        q[off + t] = static_cast<int8_t>(static_cast<int>(v - kMagic));
        sum += q[off + t];
      }
      d[bi] = db;
      s[bi] = sum;
    }
}

QuantLinearFn quant_linear_kernel(Isa isa) noexcept {
  switch (isa) {
    case Isa::Avx512Bf16:
    case Isa::Avx512: return avx512::quant_linear;
    case Isa::Avx2: return avx2::quant_linear;
    case Isa::Scalar: return scalar::quant_linear;
  }
  return scalar::quant_linear;
}

namespace {
bool has_vnni() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni");
}
}  // namespace

QuantLinearQ8Fn quant_linear_q8_kernel(Isa isa) noexcept {
  switch (isa) {
    case Isa::Avx512Bf16: return has_vnni() ? avx512vnni::quant_linear_q8 : avx512::quant_linear_q8;
    case Isa::Avx512: return avx512::quant_linear_q8;
    case Isa::Avx2: return avx2::quant_linear_q8;
    case Isa::Scalar: return scalar::quant_linear_q8;
  }
  return scalar::quant_linear_q8;
}

const char* quant_q8_dot_name(Isa isa) noexcept {
  if (isa == Isa::Scalar) return "scalar";
  return isa == Isa::Avx512Bf16 && has_vnni() ? "vnni" : "maddubs";
}

std::unique_ptr<CpuQuantLinear> quantize_linear(const TensorView& w, QuantType q, const TileConfig& cfg,
                                                int threads) {
  if (w.shape.size() != 2)
    throw ShapeError(w.file.string() + ": " + w.name + ": linear weight must be 2-D");
  const int n = static_cast<int>(w.shape[0]), k = static_cast<int>(w.shape[1]);
  if (k % kQuantBlock != 0)
    throw UsageError(w.name + ": input dimension " + std::to_string(k) + " is not a multiple of " +
                     std::to_string(kQuantBlock) + " (" + std::string(quant_name(q)) + " blocks)");
  auto lw = std::make_unique<CpuQuantLinear>(n, k, q, cfg);
  const std::size_t in_row = static_cast<std::size_t>(k) * dtype_size(w.dtype);
  const int nt = std::max(1, std::min(threads > 0 ? threads : omp_get_num_procs(), lw->n_panels()));
  std::string first_error;
  int error_row = n;
  // Panels are independent: each thread quantizes whole panels' rows through its own fp32
  // and block buffers (the same values for any thread count).
#pragma omp parallel num_threads(nt)
  {
    std::vector<float> row(static_cast<std::size_t>(k));
    std::vector<std::byte> blocks(quant_row_bytes(q, k));
#pragma omp for schedule(static)
    for (int p = 0; p < lw->n_panels(); ++p)
      for (int j = p * kQuantPanel; j < std::min(n, (p + 1) * kQuantPanel); ++j) {
        to_f32(w.dtype, static_cast<const std::byte*>(w.data) + static_cast<std::size_t>(j) * in_row, row.data(),
               row.size());
        try {
          quantize_row(q, row.data(), blocks.data(), k);
        } catch (const WeightsError& e) {  // no exception may leave an OpenMP region
#pragma omp critical(llmport_quantize_error)
          if (j < error_row) {  // the lowest row's, whatever the thread count
            error_row = j;
            first_error = w.file.string() + ": " + w.name + ": row " + std::to_string(j) + ": " + e.what();
          }
        }
        lw->set_row(j, blocks.data());
      }
  }
  if (!first_error.empty()) throw WeightsError(first_error);
  release_source_pages(w, 0, w.nbytes);
  return lw;
}

}  // namespace llmport::cpu
