// The kernel-path probe's measurement: the cpu backend's real linear kernels (packing,
// activation preparation and micro-kernels as a model runs them) timed on one thread on
// cache-resident shapes, each path with its default register blocking.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/kernel_probe.hpp"
#include "llmport/op.hpp"
#include "llmport/quant.hpp"

namespace llmport {

namespace {

// Prefill-like GEMM: m a multiple of both register blockings (12 and 13 rows), the bf16
// weight (512 KiB) resident in L2 on the CPUs measured, ~80 MFLOP (~1 ms) per call.
constexpr int kGemmM = 156, kGemmN = 512, kGemmK = 512;
// Decode GEMV on a q8_0/q4_0 weight of ~1 MiB / 0.6 MiB (L2/L3).
constexpr int kGemvN = 1024, kGemvK = 1024;
constexpr int kMaxReps = 15;
constexpr double kPathBudgetS = 0.1;

std::vector<float> filled(std::size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (float& x : v) {  // LCG in [-1, 1): the rate does not depend on the values
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

// Best seconds of one call after a warm-up call: up to kMaxReps repetitions within
// kPathBudgetS (the minimum is the least disturbed run on a shared machine).
template <class F>
double best_seconds(F&& call) {
  using clock = std::chrono::steady_clock;
  call();
  double best = 1e30, spent = 0;
  for (int r = 0; r < kMaxReps && spent < kPathBudgetS; ++r) {
    const auto t0 = clock::now();
    call();
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    best = std::min(best, s);
    spent += s;
  }
  return best;
}

std::string shape_of(int m, int n, int k) {
  return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
}

void measure_gemm_bf16(Backend& be, std::vector<ProbePath>& out) {
  const auto w = filled(static_cast<std::size_t>(kGemmN) * kGemmK, 1);
  const auto x = filled(static_cast<std::size_t>(kGemmM) * kGemmK, 2);
  std::vector<float> y(static_cast<std::size_t>(kGemmM) * kGemmN);
  const TensorView wv = TensorView::f32(w.data(), kGemmN, kGemmK, "probe.w");
  // Each path with the register blocking its default uses (tile_config.cpp).
  const TileConfig dot = cpu::default_tile_config(cpu::Isa::Avx512Bf16, DType::BF16, kGemmN, kGemmK, false);
  const TileConfig fma = cpu::default_tile_config(cpu::Isa::Avx512, DType::BF16, kGemmN, kGemmK, false);
  const struct { const char* name; int value; const TileConfig& cfg; } paths[] = {
      {"vdpbf16ps", 0, dot}, {"fp32-fma", 1, fma}};
  for (const auto& p : paths) {
    const auto lw = be.make_linear(wv, DType::BF16, p.cfg);
    const double s = best_seconds([&] { be.linear(*lw, x.data(), kGemmM, y.data(), nullptr); });
    out.push_back({"gemm bf16", "fma", p.value, p.name, shape_of(kGemmM, kGemmN, kGemmK), p.cfg,
                   2.0 * kGemmM * kGemmN * kGemmK / s / 1e9});
  }
}

void measure_gemv_quant(Backend& be, QuantType q, std::vector<ProbePath>& out) {
  const auto w = filled(static_cast<std::size_t>(kGemvN) * kGemvK, 3);
  const auto x = filled(kGemvK, 4);
  std::vector<float> y(kGemvN);
  const TensorView wv = TensorView::f32(w.data(), kGemvN, kGemvK, "probe.wq");
  const std::string op = "gemv " + std::string(quant_name(q));
  for (int act : {0, 1}) {
    const TileConfig cfg = {{kActTileKey, act}};
    const auto lw = be.make_quantized_linear(wv, q, cfg);
    const double s = best_seconds([&] { be.linear(*lw, x.data(), 1, y.data(), nullptr); });
    out.push_back({op, kActTileKey, act, act ? "q8-act" : "fp32-act", shape_of(1, kGemvN, kGemvK), cfg,
                   2.0 * kGemvN * kGemvK / s / 1e9});
  }
}

}  // namespace

std::vector<ProbePath> measure_kernel_paths(const std::string& isa) {
  const cpu::Isa level = cpu::parse_isa(isa);
  auto be = cpu::make_cpu_backend_isa(1, level);
  std::vector<ProbePath> out;
  if (level == cpu::Isa::Avx512Bf16) measure_gemm_bf16(*be, out);
  for (QuantType q : {QuantType::Q8_0, QuantType::Q4_0}) measure_gemv_quant(*be, q, out);
  return out;
}

}  // namespace llmport
