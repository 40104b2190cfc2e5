// The kernel-path probe's measurement: the cpu backend's real linear kernels (packing,
// activation preparation and micro-kernels as a model runs them) timed on one thread on
// cache-resident shapes, each path with its default register blocking.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/cpu/cache_topology.hpp"
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

// Set on the thread that measures: the linears it makes must not ask for the probe's own
// choices (probed_decode_prefetch), which would probe again from within the probe.
thread_local bool g_measuring = false;
struct MeasuringScope {
  bool was = g_measuring;
  MeasuringScope() { g_measuring = true; }
  ~MeasuringScope() { g_measuring = was; }
  MeasuringScope(const MeasuringScope&) = delete;
  MeasuringScope& operator=(const MeasuringScope&) = delete;
};

// Seconds the process's threads have spent runnable but waiting for a core (the second
// field of each /proc/self/task/<tid>/schedstat, in ns); 0 where the kernel keeps none.
double run_queue_wait_seconds() {
  double ns = 0;
  std::error_code ec;  // a thread that exits mid-walk ends the walk, never throws
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) {
    std::ifstream f(it->path() / "schedstat");
    double on_cpu = 0, waiting = 0;
    if (f >> on_cpu >> waiting) ns += waiting;
  }
  return ns * 1e-9;
}

// The run-queue wait of the process since construction over `threads` x the wall time
// (ProbePath::wait_share).
class WaitShare {
 public:
  explicit WaitShare(int threads) : threads_(threads) {}
  double share() const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
    return wall > 0 ? std::max(0.0, run_queue_wait_seconds() - wait0_) / (wall * threads_) : 0.0;
  }

 private:
  int threads_;
  double wait0_ = run_queue_wait_seconds();
  std::chrono::steady_clock::time_point wall0_ = std::chrono::steady_clock::now();
};

struct Timed {
  double seconds = 0;     // best of the repetitions
  double wait_share = 0;  // over all of them
};

// Best seconds of one call after a warm-up call: up to kMaxReps repetitions within
// kPathBudgetS (the minimum is the least disturbed run on a shared machine), on one thread.
template <class F>
Timed best_seconds(F&& call) {
  using clock = std::chrono::steady_clock;
  call();
  const WaitShare share(1);
  double best = 1e30, spent = 0;
  for (int r = 0; r < kMaxReps && spent < kPathBudgetS; ++r) {
    const auto t0 = clock::now();
    call();
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    best = std::min(best, s);
    spent += s;
  }
  return {best, share.share()};
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
    const Timed t = best_seconds([&] { be.linear(*lw, x.data(), kGemmM, y.data(), nullptr); });
    out.push_back({"gemm bf16", "fma", p.value, p.name, shape_of(kGemmM, kGemmN, kGemmK), p.cfg,
                   2.0 * kGemmM * kGemmN * kGemmK / t.seconds / 1e9, t.wait_share});
  }
}

// Weights per set of the prefetch probe: 2 MiB bf16 1024 x 1024 weights adding up to 4x
// the L3 of all the L3 domains this process may run on (cache_topology.hpp; 32 MiB where
// the machine says nothing), 16 to 128 of them. With sets of only the L3's size (32 MiB on
// the Zen 5 VM of session 19) part of each pass hit in L3 and ran at ~62 GB/s where decode
// streams at ~45-55, and the hints measured within noise.
int prefetch_probe_weights() {
  const std::size_t l3 = cpu::l3_bytes_this_process();
  const long bytes = 4 * (l3 > 0 ? static_cast<long>(std::min<std::size_t>(l3, 1UL << 34)) : 32L << 20);
  return static_cast<int>(std::clamp<long>((bytes + (2L << 20) - 1) / (2L << 20), 16, 128));
}

// The decode GEMV's weight prefetch hint, streaming from memory on every core as decode
// runs: two sets of bf16 weights of 1024 x 1024 (prefetch_probe_weights: each set 4x the
// L3, so a set is evicted while the other is read), one pass over each set in turn (the
// order alternating), after one warm-up pass each. The rate is of the median pass: the
// machine's bandwidth moves within seconds, and the best pass of each hint may come from
// different moments; the median of interleaved passes compares the two at the same
// moments. The sets share one fp32 source (4 MiB).
void measure_gemv_bf16_prefetch(Backend& be, std::vector<ProbePath>& out) {
  constexpr int kPasses = 24, kWindowAttempts = 4;
  const int kWeights = prefetch_probe_weights();
  const auto w = filled(static_cast<std::size_t>(kGemvN) * kGemvK, 5);
  const auto x = filled(kGemvK, 6);
  std::vector<float> y(kGemvN);
  const TensorView wv = TensorView::f32(w.data(), kGemvN, kGemvK, "probe.wpf");
  const struct { const char* name; int value; } hints[] = {{"prefetcht1", 0}, {"prefetchnta", 1}};
  std::vector<std::unique_ptr<LinearWeight>> sets[2];
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < kWeights; ++i)
      sets[h].push_back(be.make_linear(wv, DType::BF16, {{"gnp", 4}, {kPrefetchTileKey, hints[h].value}}));
  using clock = std::chrono::steady_clock;
  auto pass = [&](int h) {
    const auto t0 = clock::now();
    for (const auto& lw : sets[h]) be.linear(*lw, x.data(), 1, y.data(), nullptr);
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  pass(0);
  pass(1);
  // A window in which the threads waited for cores (another process, or the scheduler
  // keeping the pool's worker on the caller's core: seen on an idle 2-vCPU VM in about
  // one probe of three, the GEMV then running at one thread's rate) is measured again
  // after a pause that lets the threads be placed anew; the last window counts if none
  // is clean (its wait share then marks the op disturbed).
  std::vector<double> times[2];
  double wait_share = 0;
  for (int attempt = 0; attempt < kWindowAttempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    times[0].clear();
    times[1].clear();
    const WaitShare share(be.threads());
    for (int p = 0; p < kPasses; ++p)
      for (int i = 0; i < 2; ++i) {
        const int h = (p + i) % 2;
        times[h].push_back(pass(h));
      }
    wait_share = share.share();
    if (wait_share <= kProbeMaxWaitShare) break;
  }
  for (int h = 0; h < 2; ++h) {
    std::nth_element(times[h].begin(), times[h].begin() + kPasses / 2, times[h].end());
    out.push_back({"gemv bf16", kPrefetchTileKey, hints[h].value, hints[h].name,
                   shape_of(1, kGemvN, kGemvK) + " x" + std::to_string(kWeights) + " t" + std::to_string(be.threads()),
                   {{"gnp", 4}, {kPrefetchTileKey, hints[h].value}},
                   2.0 * kWeights * kGemvN * kGemvK / times[h][kPasses / 2] / 1e9, wait_share});
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
    const Timed t = best_seconds([&] { be.linear(*lw, x.data(), 1, y.data(), nullptr); });
    out.push_back({op, kActTileKey, act, act ? "q8-act" : "fp32-act", shape_of(1, kGemvN, kGemvK), cfg,
                   2.0 * kGemvN * kGemvK / t.seconds / 1e9, t.wait_share});
  }
}

}  // namespace

std::vector<ProbePath> measure_kernel_paths(const std::string& isa) {
  const cpu::Isa level = cpu::parse_isa(isa);
  const MeasuringScope scope;
  auto be = cpu::make_cpu_backend_isa(1, level);
  std::vector<ProbePath> out;
  if (level == cpu::Isa::Avx512Bf16) measure_gemm_bf16(*be, out);
  // The prefetch hint matters where the cores share the memory system, as decode runs: on
  // every core (one thread saw no difference on Zen 5, two threads 5-15%).
  if (level == cpu::Isa::Avx512Bf16 || level == cpu::Isa::Avx512)
    measure_gemv_bf16_prefetch(*cpu::make_cpu_backend_isa(std::max(1, omp_get_num_procs()), level), out);
  for (QuantType q : {QuantType::Q8_0, QuantType::Q4_0}) measure_gemv_quant(*be, q, out);
  return out;
}

namespace cpu {
bool in_probe_measurement() { return g_measuring; }
}  // namespace cpu

}  // namespace llmport
