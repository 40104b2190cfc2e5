// CPU kernel throughput at the linear shapes of the benchmark models (Google Benchmark):
// prefill GEMM (GFLOP/s counter) and decode GEMV (GB/s counter) per dtype, plus attention.
// Timings live here, never in tests.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/backend_impls.hpp"
#include "llmport/kernels.hpp"

namespace {

using llmport::DType;

std::vector<float> random_vec(std::size_t n, float scale) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
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
  const auto x = random_vec(static_cast<std::size_t>(m) * k, 1.0f);
  std::vector<float> y(static_cast<std::size_t>(m) * n);
  for (auto _ : st) {
    be->linear(*lw, x.data(), m, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  st.counters["GB/s"] = benchmark::Counter(static_cast<double>(lw->bytes()),
                                           benchmark::Counter::kIsIterationInvariantRate,
                                           benchmark::Counter::kIs1000);
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
}
BENCHMARK(BM_Linear)->Apply(LinearArgs)->ArgNames({"m", "n", "k", "dtype", "threads"})->UseRealTime();

void BM_Attention(benchmark::State& st) {
  const int m = static_cast<int>(st.range(0)), ctx = static_cast<int>(st.range(1));
  const int nh = 32, nkv = 4, hd = 64;
  auto be = llmport::make_cpu_backend(2);
  const auto q = random_vec(static_cast<std::size_t>(m) * nh * hd, 1.0f);
  const auto kc = random_vec(static_cast<std::size_t>(nkv) * ctx * hd, 1.0f);
  const auto vc = random_vec(static_cast<std::size_t>(nkv) * ctx * hd, 1.0f);
  std::vector<float> out(q.size());
  for (auto _ : st) {
    be->attention(q.data(), kc.data(), vc.data(), ctx, ctx - m, m, nh, nkv, hd, 0.125f, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Attention)->Args({512, 512})->Args({1, 512})->Args({1, 2048})->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
