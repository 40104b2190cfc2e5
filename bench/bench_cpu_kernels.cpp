// CPU kernel throughput at the linear shapes of the benchmark models (Google Benchmark):
// prefill GEMM (GFLOP/s counter) and decode GEMV (GB/s counter) per dtype, the q8_0/q4_0
// linears per activation path (BM_QuantLinear; LLMPORT_CPU_ISA=avx2 runs the ymm tile loop
// beside the default level's zmm one), the bf16 GEMM's vdpbf16ps vs fp32-FMA paths per tile
// config (BM_GemmBf16Cfg), plus attention.
// Timings live here, never in tests.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "kernels/backend_impls.hpp"
#include "llmport/kernels.hpp"
#include "llmport/quant.hpp"

namespace {

using llmport::DType;

std::vector<float> random_vec(std::size_t n, float scale) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Times y = x W^T for x [m, k] (random) on `be`, with the GFLOP/s and GB/s (packed weight
// bytes read per call) counters.
void time_linear(benchmark::State& st, llmport::Backend& be, const llmport::LinearWeight& lw, int m, int n, int k) {
  const auto x = random_vec(static_cast<std::size_t>(m) * k, 1.0f);
  std::vector<float> y(static_cast<std::size_t>(m) * n);
  for (auto _ : st) {
    be.linear(lw, x.data(), m, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  st.counters["GB/s"] = benchmark::Counter(static_cast<double>(lw.bytes()),
                                           benchmark::Counter::kIsIterationInvariantRate,
                                           benchmark::Counter::kIs1000);
}

void BM_Linear(benchmark::State& st) {
  const int m = static_cast<int>(st.range(0)), n = static_cast<int>(st.range(1)),
            k = static_cast<int>(st.range(2));
  const DType dt = static_cast<DType>(st.range(3));
  const int threads = static_cast<int>(st.range(4));
  auto be = llmport::make_cpu_backend(threads);
  const auto w = random_vec(static_cast<std::size_t>(n) * k, 1.0f / std::sqrt(k));
  llmport::TensorView v;
  v.dtype = DType::F32;
  v.shape = {n, k};
  v.data = w.data();
  v.nbytes = w.size() * 4;
  auto lw = be->make_linear(v, dt);
  time_linear(st, *be, *lw, m, n, k);
  st.SetLabel(std::string(llmport::dtype_name(dt)) + " " + be->isa());
}

void LinearArgs(benchmark::internal::Benchmark* b) {
  // TinyLlama-1.1B shapes: q/o 2048x2048, gate/up 5632x2048, down 2048x5632.
  for (int dt : {static_cast<int>(DType::BF16), static_cast<int>(DType::F32)})
    for (int t : {1, 2}) {
      b->Args({1, 5632, 2048, dt, t});
      b->Args({1, 2048, 5632, dt, t});
      b->Args({512, 5632, 2048, dt, t});
      b->Args({512, 2048, 2048, dt, t});
    }
  // Qwen3-0.6B prefill shapes (bf16, 2 threads): q 2048x1024, k/v 1024x1024, o 1024x2048,
  // gate/up 3072x1024, down 1024x3072: narrow n and short k, where the GEMM is furthest
  // from the peak.
  const int bf16 = static_cast<int>(DType::BF16);
  for (auto [n, k] : {std::pair{2048, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {1024, 3072}})
    b->Args({512, n, k, bf16, 2});
}
BENCHMARK(BM_Linear)->Apply(LinearArgs)->ArgNames({"m", "n", "k", "dtype", "threads"})->UseRealTime();

// q8_0 / q4_0 weights (quant 0 / 1), fp32 x (act 0) or q8 x blocks (act 1). GB/s counts the
// packed blocks a call reads: the decode GEMV's read bound is the machine's read rate.
void BM_QuantLinear(benchmark::State& st) {
  const int m = static_cast<int>(st.range(0)), n = static_cast<int>(st.range(1)),
            k = static_cast<int>(st.range(2));
  const auto q = st.range(3) == 0 ? llmport::QuantType::Q8_0 : llmport::QuantType::Q4_0;
  const int act = static_cast<int>(st.range(4)), threads = static_cast<int>(st.range(5));
  auto be = llmport::make_cpu_backend(threads);
  const auto w = random_vec(static_cast<std::size_t>(n) * k, 1.0f / std::sqrt(k));
  const auto lw = be->make_quantized_linear(llmport::TensorView::f32(w.data(), n, k, "w"), q, {{"act", act}});
  time_linear(st, *be, *lw, m, n, k);
  st.SetLabel(std::string(llmport::quant_name(q)) + " act " + std::to_string(act) + " " + be->isa());
}

void QuantLinearArgs(benchmark::internal::Benchmark* b) {
  // TinyLlama-1.1B gate/up and down (decode and a 512-token prefill), qwen3-0.6b q/o.
  for (int q : {0, 1})
    for (int t : {1, 2}) {
      b->Args({1, 5632, 2048, q, 1, t});
      b->Args({1, 2048, 5632, q, 1, t});
      b->Args({1, 1024, 1024, q, 1, t});
      b->Args({512, 5632, 2048, q, 1, t});
      b->Args({512, 1024, 1024, q, 1, t});
    }
}
BENCHMARK(BM_QuantLinear)->Apply(QuantLinearArgs)->ArgNames({"m", "n", "k", "quant", "act", "threads"})->UseRealTime();

// The decode GEMV alone against its own read bound, from DRAM: a stack of distinct
// 5632 x 2048 weights (tinyllama-1.1b's gate/up) past the CPU caches (>= 256 MiB), each
// iteration one GEMV through every weight (as a decode step's projections, no other ops)
// then the backend streaming the same packed bytes once (Backend::read_bandwidth_gbps, the
// bound `bench` uses), so GEMV and bound alternate. "of_bound" = GEMV GB/s / bound GB/s,
// from the summed times of all iterations. dtype: 0 bf16, 1 q8_0, 2 q4_0. gnp: the bf16
// GEMV's panel streams (0: the default config). n, k: the weight shape (0: 5632 x 2048).
// The fraction falls with k, not with the weight's size (Zen 5, one run: n 3072 at k 512
// 0.73, 1024 0.83, 1536 0.85, 2048 0.89; 1024 x 3072 0.89 but 3072 x 1024 0.81 at the
// same 6 MiB): a fixed ~0.7 us per 4-panel tile, not per call or per chunk (prefetching
// the next tile's or the next GEMV's first lines, fewer or more chunks per thread, 8
// panel streams: no change). qwen3-0.6b's k = 1024 GEMVs sit there.
void BM_GemvFromDram(benchmark::State& st) {
  const int kind = static_cast<int>(st.range(0)), threads = static_cast<int>(st.range(1));
  const int gnp = static_cast<int>(st.range(2));
  const int n = st.range(3) > 0 ? static_cast<int>(st.range(3)) : 5632;
  const int k = st.range(4) > 0 ? static_cast<int>(st.range(4)) : 2048;
  auto be = llmport::make_cpu_backend(threads);
  const auto w = random_vec(static_cast<std::size_t>(n) * k, 1.0f / std::sqrt(k));
  const auto view = llmport::TensorView::f32(w.data(), n, k, "w");
  const llmport::TileConfig cfg = gnp > 0 ? llmport::TileConfig{{"gnp", gnp}} : llmport::TileConfig{};
  std::vector<std::unique_ptr<llmport::LinearWeight>> ws;
  std::vector<const llmport::LinearWeight*> ptrs;
  std::size_t bytes = 0;
  while (bytes < (std::size_t{256} << 20)) {
    ws.push_back(kind == 0 ? be->make_linear(view, DType::BF16, cfg)
                           : be->make_quantized_linear(view, kind == 1 ? llmport::QuantType::Q8_0
                                                                       : llmport::QuantType::Q4_0));
    ptrs.push_back(ws.back().get());
    bytes += ws.back()->bytes();
  }
  const auto x = random_vec(k, 1.0f);
  std::vector<float> y(n);
  double gemv_s = 0, bound_gbps_sum = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto* lw : ptrs) be->linear(*lw, x.data(), 1, y.data());
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(y.data());
    gemv_s += dt;
    st.SetIterationTime(dt);
    bound_gbps_sum += be->read_bandwidth_gbps(ptrs, 1);
  }
  const double iters = static_cast<double>(st.iterations());
  const double gemv_gbps = bytes * iters / gemv_s * 1e-9, bound_gbps = bound_gbps_sum / iters;
  st.counters["GB/s"] = gemv_gbps;
  st.counters["bound_GB/s"] = bound_gbps;
  st.counters["of_bound"] = gemv_gbps / bound_gbps;
  st.SetLabel(std::string(kind == 0 ? "bf16" : kind == 1 ? "q8_0" : "q4_0") + " " + be->isa() + " " +
              std::to_string(ptrs.size()) + " weights, " + std::to_string(bytes >> 20) + " MiB");
}
BENCHMARK(BM_GemvFromDram)
    ->ArgsProduct({{0, 1, 2}, {1, 2}, {0}, {0}, {0}})
    ->Args({0, 2, 1, 0, 0})
    ->Args({0, 2, 2, 0, 0})
    ->Args({0, 2, 0, 3072, 1024})
    ->Args({0, 2, 1, 3072, 1024})
    ->Args({0, 2, 2, 3072, 1024})
    ->Args({0, 2, 0, 1024, 1024})
    ->Args({0, 2, 0, 1024, 3072})
    ->Args({0, 2, 0, 3072, 512})
    ->Args({0, 2, 0, 3072, 2048})
    ->ArgNames({"dtype", "threads", "gnp", "n", "k"})
    ->UseManualTime()
    ->MinTime(1.0);

// bf16 prefill GEMM at the qwen3-0.6b linear shapes (M = 512, 2 threads), vdpbf16ps
// (fma 0; the emulation on CPUs without AVX512_BF16) vs the fp32-FMA path (fma 1) with
// explicit tile configs, so one run gives the ratio on this machine.
void BM_GemmBf16Cfg(benchmark::State& st) {
  const int m = 512, threads = 2;
  const int n = static_cast<int>(st.range(0)), k = static_cast<int>(st.range(1));
  const llmport::TileConfig cfg = {{"fma", static_cast<int>(st.range(2))},
                                   {"mr", static_cast<int>(st.range(3))},
                                   {"np", static_cast<int>(st.range(4))},
                                   {"kc", static_cast<int>(st.range(5))},
                                   {"mc", static_cast<int>(st.range(6))},
                                   {"nc", static_cast<int>(st.range(7))}};
  auto be = llmport::make_cpu_backend(threads);
  const auto w = random_vec(static_cast<std::size_t>(n) * k, 1.0f / std::sqrt(k));  // [n, k]
  llmport::TensorView v;
  v.dtype = DType::F32;
  v.shape = {n, k};
  v.data = w.data();
  v.nbytes = w.size() * 4;
  std::unique_ptr<llmport::LinearWeight> lw;
  try {
    lw = be->make_linear(v, DType::BF16, cfg);
  } catch (const std::exception& e) {  // fma 1 below AVX-512
    st.SkipWithError(e.what());
    return;
  }
  const auto x = random_vec(static_cast<std::size_t>(m) * k, 1.0f);  // [m, k]
  std::vector<float> y(static_cast<std::size_t>(m) * n);             // [m, n]
  for (auto _ : st) {
    be->linear(*lw, x.data(), m, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  st.SetLabel(be->isa());
}

void GemmBf16CfgArgs(benchmark::internal::Benchmark* b) {
  // qwen3-0.6b: q 2048x1024, k/v 1024x1024, o 1024x2048, gate/up 3072x1024, down 1024x3072.
  // {n, k, fma, mr, np, kc, mc, nc}
  for (const auto& [n, k] : {std::pair{2048, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024},
                             {1024, 3072}}) {
    b->Args({n, k, 0, 12, 2, 512, 96, 512});  // the bf16 default (vdpbf16ps)
    b->Args({n, k, 0, 6, 4, 512, 96, 2048});
    b->Args({n, k, 1, 12, 2, 512, 96, 512});
    b->Args({n, k, 1, 13, 2, 1024, 91, 512});
    b->Args({n, k, 1, 8, 3, 1024, 96, 768});
    b->Args({n, k, 1, 5, 4, 1024, 100, 512});
  }
}
BENCHMARK(BM_GemmBf16Cfg)
    ->Apply(GemmBf16CfgArgs)
    ->ArgNames({"n", "k", "fma", "mr", "np", "kc", "mc", "nc"})
    ->UseRealTime();

void BM_Attention(benchmark::State& st) {
  const int m = static_cast<int>(st.range(0)), ctx = static_cast<int>(st.range(1));
  const int nh = static_cast<int>(st.range(2)), nkv = static_cast<int>(st.range(3)),
            hd = static_cast<int>(st.range(4));
  auto be = llmport::make_cpu_backend(2);
  be->set_batch_invariant(st.range(5) != 0);  // serve's mode: every row scored from the K rows
  const auto q = random_vec(static_cast<std::size_t>(m) * nh * hd, 1.0f);        // [m, nh, hd]
  const auto kc = random_vec(static_cast<std::size_t>(nkv) * ctx * hd, 1.0f);    // [nkv, ctx, hd]
  const auto vc = random_vec(static_cast<std::size_t>(nkv) * ctx * hd, 1.0f);    // [nkv, ctx, hd]
  std::vector<float> out(q.size());                                              // [m, nh, hd]
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (auto _ : st) {
    llmport::AttentionArgs a;
    a.q = q.data();
    a.k_cache = kc.data();
    a.v_cache = vc.data();
    a.kv_capacity = ctx;
    a.start_pos = ctx - m;
    a.m = m;
    a.n_heads = nh;
    a.n_kv_heads = nkv;
    a.head_dim = hd;
    a.scale = scale;
    a.out = out.data();
    be->attention(a);
    benchmark::DoNotOptimize(out.data());
  }
  // Causal QK^T and PV: 4 flops per (query head, key, dim) over the visible keys.
  double pairs = 0.0;
  for (int t = 0; t < m; ++t) pairs += ctx - m + t + 1;
  const double flops = 4.0 * pairs * nh * hd;
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  // Decode reads every K and V row of the context once per kv head.
  const double kv_bytes = 2.0 * nkv * (ctx) * hd * 4.0;
  st.counters["KV_GB/s"] = benchmark::Counter(kv_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
// {m, ctx, n_heads, n_kv_heads, head_dim}: Llama-like hd 64 group 8 (TinyLlama), Llama-3.2-1B
// (32/8/64, group 4), Qwen3-0.6B (16/8/128, group 2); bi 1: batch-invariant mode (serve).
BENCHMARK(BM_Attention)
    ->Args({512, 512, 32, 4, 64, 0})
    ->Args({1, 512, 32, 4, 64, 0})
    ->Args({1, 2048, 32, 4, 64, 0})
    ->Args({1, 160, 32, 8, 64, 0})
    ->Args({1, 512, 32, 8, 64, 0})
    ->Args({512, 512, 16, 8, 128, 0})
    ->Args({512, 512, 16, 8, 128, 1})
    ->Args({1, 160, 16, 8, 128, 0})
    ->Args({1, 512, 16, 8, 128, 0})
    ->Args({1, 2048, 16, 8, 128, 0})
    ->ArgNames({"m", "ctx", "nh", "nkv", "hd", "bi"})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
