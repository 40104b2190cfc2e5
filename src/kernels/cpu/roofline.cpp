// This machine's measured roofline (llmport/roofline.hpp): streaming read bandwidth and the
// compute peaks, measured with the cpu backend's own read and FMA / vdpbf16ps loops. It
// lives with the cpu kernels because those loops are theirs; the model-side arithmetic
// (costs, bounds) is in src/registry/roofline.cpp.
#include "llmport/roofline.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/cpu_peak.hpp"

namespace llmport {

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs f(t, T) on T threads (the caller is thread 0) and returns the sum of the results.
// Plain threads, joined before returning, not an OpenMP region: libgomp's idle workers
// spin for a while after a region, and `llmport bench` measures these bounds between
// repetitions, where spinning threads would steal the two cores from the engine's pool.
template <class F>
double on_threads(int T, F&& f) {
  std::vector<double> out(static_cast<std::size_t>(T), 0.0);
  std::vector<std::thread> ts;
  for (int t = 1; t < T; ++t) ts.emplace_back([&, t] { out[static_cast<std::size_t>(t)] = f(t, T); });
  out[0] = f(0, T);
  for (auto& th : ts) th.join();
  double sum = 0;
  for (double v : out) sum += v;
  return sum;
}

// Best-of-6 streaming read of `n` floats split over `threads`, best over 1, 4 and 8
// concurrent streams per thread (the bound is what the best access pattern reaches; the
// decode GEMV streams several panels at once). Best-of because on a shared machine a pass
// in which the OS deschedules one thread of the region measures the load, not the memory;
// a short best-of-3 gave bounds that decode then beat by 1.2x.
double read_gbps(const float* buf, std::size_t n, int threads, bool avx512) {
  double best = 0;
  for (int streams : {1, 4, 8})
    for (int rep = 0; rep < 4; ++rep) {
      const double t0 = now();
      const double total = on_threads(threads, [&](int t, int T) {
        const std::size_t i0 = n * t / T, i1 = n * (t + 1) / T;
        const std::size_t bytes = (i1 - i0) * sizeof(float);
        return static_cast<double>(avx512 ? cpu::read_xor_streams_avx512(buf + i0, bytes, streams)
                                          : cpu::read_xor_streams_avx2(buf + i0, bytes, streams));
      });
      const double dt = now() - t0;
      volatile float sink = total;
      (void)sink;
      best = std::max(best, n * 4.0 / dt * 1e-9);
    }
  return best;
}

template <class F>
double peak(int threads, F&& f) {
  // Calibrate to ~0.02 s per thread, then run all threads at once.
  long iters = 1 << 16;
  for (;;) {
    const double t0 = now();
    f(iters);
    if (now() - t0 > 0.02 || iters > (1L << 30)) break;
    iters *= 4;
  }
  iters *= 2;
  // Best of 4 passes of ~0.04 s (see read_gbps: one descheduled thread spoils a pass).
  double best = 0;
  for (int rep = 0; rep < 4; ++rep) {
    const double t0 = now();
    const double flops = on_threads(threads, [&](int, int) { return f(iters); });
    best = std::max(best, flops / (now() - t0) * 1e-9);
  }
  return best;
}
}  // namespace

namespace {
int thread_count(int threads) { return threads > 0 ? threads : std::max(1, omp_get_num_procs()); }

// The compute peaks of r.threads threads into r (vdpbf16ps only when `bf16` and supported,
// the int8 dot only when `int8`).
// Needs AVX2.
void measure_peaks(Roofline& r, bool bf16, bool int8) {
  if (bf16 && cpu::isa_supported(cpu::Isa::Avx512Bf16))
    r.bf16_gflops = peak(r.threads, [](long it) { return cpu::peak_bf16_avx512bf16(it); });
  if (int8) {
    __builtin_cpu_init();
    if (cpu::isa_supported(cpu::Isa::Avx512) && __builtin_cpu_supports("avx512vnni"))
      r.int8_gops = peak(r.threads, [](long it) { return cpu::peak_int8_avx512vnni(it); });
    else if (cpu::isa_supported(cpu::Isa::Avx512))
      r.int8_gops = peak(r.threads, [](long it) { return cpu::peak_int8_avx512(it); });
    else
      r.int8_gops = peak(r.threads, [](long it) { return cpu::peak_int8_avx2(it); });
  }
  r.f32_gflops = cpu::isa_supported(cpu::Isa::Avx512)
                     ? peak(r.threads, [](long it) { return cpu::peak_f32_avx512(it); })
                     : peak(r.threads, [](long it) { return cpu::peak_f32_avx2(it); });
}
}  // namespace

Roofline measure_roofline(int threads) {
  Roofline r;
  r.threads = thread_count(threads);
  const bool avx512 = cpu::isa_supported(cpu::Isa::Avx512);
  const bool avx2 = cpu::isa_supported(cpu::Isa::Avx2);
  r.isa = avx512 ? "avx512" : (avx2 ? "avx2" : "scalar");
  if (!avx2) return r;
  const std::size_t n = (std::size_t{512} << 20) / 4;  // 512 MiB of floats
  std::unique_ptr<float, decltype(&std::free)> buf(
      static_cast<float*>(std::aligned_alloc(64, n * 4)), &std::free);
  on_threads(r.threads, [&](int t, int T) {  // fault the pages in, each thread its part
    std::fill(buf.get() + n * t / T, buf.get() + n * (t + 1) / T, 1.0f);
    return 0.0;
  });
  r.read_gbps_1t = read_gbps(buf.get(), n, 1, avx512);
  r.read_gbps = read_gbps(buf.get(), n, r.threads, avx512);
  measure_peaks(r, /*bf16=*/true, /*int8=*/true);
  return r;
}

Roofline measure_compute_peaks(int threads, bool bf16, bool int8) {
  Roofline r;
  r.threads = thread_count(threads);
  if (!cpu::isa_supported(cpu::Isa::Avx2)) return r;
  measure_peaks(r, bf16, int8);
  return r;
}

}  // namespace llmport
