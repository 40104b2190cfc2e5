// CPU GEMM/GEMV vs the reference backend, every ISA level this machine runs, every dtype,
// odd shapes (M = 1, 3, 17; K, N not multiples of the tile), several tile configs, including
// the fp32-FMA bf16 GEMM ("fma": 1) and the rules of that config key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/backend_impls.hpp"
#include "llmport/error.hpp"
#include "kernels/cpu_test_util.hpp"
#include "llmport/op_harness.hpp"

namespace llmport::test {
namespace {

struct Shape {
  int n, k;
};

bool is_avx512(cpu::Isa isa) { return isa == cpu::Isa::Avx512 || isa == cpu::Isa::Avx512Bf16; }
bool uses_fma(const TileConfig& cfg) {
  auto it = cfg.find("fma");
  return it != cfg.end() && it->second == 1;
}

// Compared through the op harness (llmport/op_harness.hpp): W ~ N(0, 1/k), bias N(0, 0.5),
// x N(0, 1) on the bf16 grid for bf16, the reference on the same values, every element within
// tolerance(gemm|gemv, dtype, k (+1 with bias)) times sum_j |x_j w_ij| + |b_i|, guard words
// around each output.
TEST(CpuLinear, MatchesReferenceAllIsasDtypesShapes) {
  // k = 2048: the A rows are re-strided (a_row_stride) for every dtype, fp32 x copied.
  const std::vector<Shape> shapes = {{33, 70}, {16, 64}, {100, 257}, {47, 1031}, {300, 129},
                                     {20, 2048}};
  const std::vector<TileConfig> configs = {
      {},  // the backend's defaults
      {{"mr", 5}, {"np", 4}, {"kc", 64}, {"mc", 10}, {"nc", 48}, {"gnp", 2}},
      {{"mr", 3}, {"np", 1}, {"kc", 30}, {"mc", 7}, {"nc", 16}, {"gnp", 1}},
      // The fp32-FMA bf16 GEMM (bf16 weights at the AVX-512 levels only; rejected
      // elsewhere): the register-limit tile of each np (13x2, 8x3, 5x4, 16x1) and partial
      // tiles in every direction (m = 3, 17 vs mr; n tails vs np; k blocks that split an
      // odd k; mc / nc that are not multiples of mr / np).
      {{"fma", 1}, {"mr", 13}, {"np", 2}, {"kc", 1024}, {"mc", 91}, {"nc", 512}, {"gnp", 4}},
      {{"fma", 1}, {"mr", 8}, {"np", 3}, {"kc", 62}, {"mc", 20}, {"nc", 80}, {"gnp", 1}},
      {{"fma", 1}, {"mr", 5}, {"np", 4}, {"kc", 30}, {"mc", 7}, {"nc", 48}, {"gnp", 2}},
      {{"fma", 1}, {"mr", 16}, {"np", 1}, {"kc", 2}, {"mc", 16}, {"nc", 16}},
      {{"fma", 1}, {"mr", 2}, {"np", 3}, {"kc", 7}, {"mc", 3}, {"nc", 16}},
      {{"fma", 0}, {"mr", 12}, {"np", 2}},  // explicit vdpbf16ps / emulation
      // The decode GEMV's prefetch hints (prefetcht1, prefetchnta) at every panel count.
      {{"pf", 0}, {"gnp", 4}}, {{"pf", 1}, {"gnp", 4}}, {{"pf", 1}, {"gnp", 2}}, {{"pf", 1}, {"gnp", 1}},
  };
  int cases = 0, fma_cases = 0;
  bool any_avx512 = false;
  for (cpu::Isa isa : isas_under_test()) {
    any_avx512 |= is_avx512(isa);
    auto be = cpu::make_cpu_backend_isa(2, isa);
    for (DType dt : {DType::BF16, DType::F16, DType::F32})
      for (const Shape& s : shapes) {
        OpHarness h;  // one weight per shape: packed once, re-tiled per config
        for (const TileConfig& cfg : configs) {
          const bool fma = uses_fma(cfg);
          if (fma && !(dt == DType::BF16 && is_avx512(isa))) {
            // 'fma': 1 is an option of bf16 weights at the AVX-512 levels only.
            const auto w = random_vec(static_cast<std::size_t>(s.n) * s.k, 1.0f, 1u);
            EXPECT_THROW(be->make_linear(view_of(w, s.n, s.k), dt, cfg), UsageError)
                << cpu::isa_name(isa) << " " << dtype_name(dt);
            continue;
          }
          if (isa == cpu::Isa::Avx2 && cfg.count("mr") && cfg.at("mr") > cpu::kAvx2MaxMr) {
            // Above the AVX2 micro-kernel's rows: refused, not clamped (TileValues... below).
            const auto w = random_vec(static_cast<std::size_t>(s.n) * s.k, 1.0f, 1u);
            EXPECT_THROW(be->make_linear(view_of(w, s.n, s.k), dt, cfg), UsageError) << dtype_name(dt);
            continue;
          }
          // An empty config packs with the heuristic default, which may pick the FMA path.
          const TileConfig used =
              cfg.empty() ? be->default_tiles({OpKind::Gemm, dt, {{"n", s.n}, {"k", s.k}}}) : cfg;
          const bool fma_used = uses_fma(used);
          for (int m : {1, 3, 17})
            for (bool with_bias : {false, true}) {
              OpCase c{m == 1 ? OpKind::Gemv : OpKind::Gemm, dt,
                       m == 1 ? OpShape{{"n", s.n}, {"k", s.k}} : OpShape{{"m", m}, {"n", s.n}, {"k", s.k}}};
              c.tiles = cfg;
              c.bias = with_bias;
              c.seed = 1u + s.n;
              be->reset_counters();
              const OpResult r = h.run(*be, c);
              const std::string what = std::string(cpu::isa_name(isa)) + " " + describe(c, r) + (fma ? " fma" : "");
              EXPECT_TRUE(r.pass()) << what;
              // The FMA path is the prefill GEMM's; m = 1 stays on the GEMV.
              const std::string kernel = std::string("cpu/") + cpu::isa_name(isa) + ":" +
                                         (m == 1 ? "gemv" : fma_used ? "gemm_fma" : "gemm");
              EXPECT_EQ(be->counters().calls.count(kernel), 1u) << what;
              ++cases;
              fma_cases += fma && m > 1;
            }
        }
      }
  }
  EXPECT_GT(cases, 0) << "no ISA level ran";
  if (any_avx512) {
    EXPECT_GT(fma_cases, 0) << "no fp32-FMA bf16 GEMM case ran";
  }
}

// The A operand of the bf16 paths is x rounded to bf16 (round-to-nearest-even; NaN is
// PropagatesNanAndInf's): with W = I every output is one product x * 1 plus exact zeros,
// so y must equal the rounded x bit for bit, ties and odd k included, on the
// vdpbf16ps/emulation and the FMA paths.
TEST(CpuLinear, Bf16PathsRoundXExactlyLikeTheDtype) {
  const int n = 37, k = 37, m = 5;
  std::vector<float> w(static_cast<std::size_t>(n) * k, 0.0f);  // [n, k] identity
  for (int i = 0; i < n; ++i) w[static_cast<std::size_t>(i) * k + i] = 1.0f;
  std::vector<float> x(static_cast<std::size_t>(m) * k);  // [m, k]
  for (std::size_t i = 0; i < x.size(); ++i) {
    // bf16 keeps 7 fraction bits: +2^-8 on a bf16 value is a tie, +2^-10 rounds down.
    const float base = 1.0f + static_cast<float>(i % 7) / 128.0f;
    x[i] = (i % 3 == 0 ? base + 1.0f / 256.0f : base + 1.0f / 1024.0f) * (i % 2 ? -3.0f : 0.5f);
  }
  x[4] = 1.00390625f;  // 1 + 2^-8: tie, rounds to even (1.0)
  x[5] = 1.01171875f;  // 1 + 3 * 2^-8: tie, rounds to even (1 + 2^-6)
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(1, isa);
    std::vector<TileConfig> cfgs = {{{"fma", 0}}};
    if (is_avx512(isa)) cfgs.push_back({{"fma", 1}, {"mr", 3}, {"np", 3}});
    for (const TileConfig& cfg : cfgs) {
      auto cw = be->make_linear(view_of(w, n, k), DType::BF16, cfg);
      std::vector<float> y(static_cast<std::size_t>(m) * n);  // [m, n]
      be->linear(*cw, x.data(), m, y.data());
      for (std::size_t i = 0; i < y.size(); ++i) {
        const float want = bf16_to_f32(f32_to_bf16(x[i]));
        EXPECT_EQ(y[i], want) << cpu::isa_name(isa) << " fma=" << cfg.at("fma") << " i=" << i;
      }
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

// The decode GEMV's prefetch hint moves memory traffic only: pf 0 and pf 1 give the same
// bits at every level, dtype and panel count; 'pf' other than 0/1 is refused naming it.
TEST(CpuLinear, PrefetchHintChangesNoBitAndIsParsed) {
  EXPECT_EQ(cpu::blocking_from_config({{"pf", 1}}).pf, 1);
  EXPECT_EQ(cpu::blocking_from_config({{"pf", 0}}).pf, 0);
  try {
    cpu::blocking_from_config({{"pf", 2}});
    ADD_FAILURE() << "pf 2 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'pf'"), std::string::npos) << e.what();
  }
  const int n = 200, k = 1031;
  const auto w = random_vec(static_cast<std::size_t>(n) * k, 0.03f, 7u);
  const auto x = random_vec(k, 1.0f, 8u);
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(2, isa);
    for (DType dt : {DType::BF16, DType::F16, DType::F32})
      for (int gnp : {1, 2, 4}) {
        std::vector<float> y[2];
        for (int pf : {0, 1}) {
          auto lw = be->make_linear(view_of(w, n, k), dt, {{"gnp", gnp}, {"pf", pf}});
          y[pf].assign(n, 0.0f);
          be->linear(*lw, x.data(), 1, y[pf].data());
        }
        EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), n * sizeof(float)), 0)
            << cpu::isa_name(isa) << " " << dtype_name(dt) << " gnp " << gnp;
        ++cases;
      }
  }
  EXPECT_GT(cases, 0);
}

// A tile value the kernels would clamp or round (mr past the register limit at its np, an np
// or gnp without a micro-kernel) is refused naming the key, at make_linear and at retile (the
// weight keeps its config), so no registry entry records a config that never ran. Keys a level
// does not read (np and gnp at AVX2, everything at scalar) are not judged there.
TEST(CpuLinear, TileValuesTheKernelsWouldClampAreRefused) {
  const int n = 40, k = 64;
  const auto w = random_vec(static_cast<std::size_t>(n) * k, 0.1f, 3u);
  const auto refused = [&](cpu::Isa isa, DType dt, const TileConfig& cfg, const std::string& key) {
    try {
      cpu::check_tiles_run_as_given(isa, dt, cfg);
      return false;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("'" + key + "'"), std::string::npos) << e.what();
      return true;
    }
  };
  using cpu::Isa;
  for (Isa isa : {Isa::Avx512, Isa::Avx512Bf16}) {
    EXPECT_TRUE(refused(isa, DType::BF16, {{"mr", 13}, {"np", 2}, {"fma", 0}}, "mr")) << cpu::isa_name(isa);
    EXPECT_FALSE(refused(isa, DType::BF16, {{"mr", 13}, {"np", 2}, {"fma", 1}}, "mr"));  // the FMA tile
    EXPECT_TRUE(refused(isa, DType::BF16, {{"mr", 14}, {"np", 2}, {"fma", 1}}, "mr"));
    EXPECT_TRUE(refused(isa, DType::F32, {{"mr", 7}, {"np", 4}}, "mr"));
    EXPECT_FALSE(refused(isa, DType::F32, {{"mr", 6}, {"np", 4}}, "mr"));
    EXPECT_TRUE(refused(isa, DType::F16, {{"np", 3}}, "np"));
    EXPECT_FALSE(refused(isa, DType::BF16, {{"np", 3}, {"mr", 8}, {"fma", 1}}, "np"));
    EXPECT_TRUE(refused(isa, DType::BF16, {{"np", 5}, {"fma", 1}}, "np"));
    EXPECT_TRUE(refused(isa, DType::BF16, {{"gnp", 3}}, "gnp"));
    EXPECT_TRUE(refused(isa, DType::F32, {{"mr", 1000000}}, "mr"));
    EXPECT_FALSE(refused(isa, DType::F32, {{"kc", 1000000}, {"mc", 7}, {"nc", 17}}, "kc"));  // block sizes
  }
  EXPECT_TRUE(refused(Isa::Avx2, DType::F32, {{"mr", 5}}, "mr"));
  EXPECT_FALSE(refused(Isa::Avx2, DType::F32, {{"mr", 4}, {"np", 3}, {"gnp", 3}}, "mr"));
  EXPECT_FALSE(refused(Isa::Scalar, DType::F32, {{"mr", 100}, {"np", 9}, {"gnp", 9}}, "mr"));
  // Through the backend, at the best level this CPU runs.
  const auto levels = cpu::supported_isas();
  auto be = cpu::make_cpu_backend_isa(1, levels.front());
  const int too_many = levels.front() == Isa::Scalar ? 0 : levels.front() == Isa::Avx2 ? 5 : 13;
  if (too_many > 0) {
    EXPECT_THROW(be->make_linear(view_of(w, n, k), DType::F32, {{"mr", too_many}, {"np", 2}}), UsageError);
    auto lw = be->make_linear(view_of(w, n, k), DType::F32, {{"mr", 2}, {"np", 1}});
    EXPECT_THROW(be->retile(*lw, {{"mr", too_many}, {"np", 2}}), UsageError);
    EXPECT_EQ(lw->config.at("mr"), 2);  // the refused config was not kept
  }
}

TEST(CpuLinear, FmaConfigKeyParsedAndRejected) {
  EXPECT_EQ(cpu::blocking_from_config({{"fma", 1}}).fma, 1);
  EXPECT_EQ(cpu::blocking_from_config({{"fma", 0}}).fma, 0);
  EXPECT_EQ(cpu::blocking_from_config({}).fma, 0);  // absent: vdpbf16ps / emulation
  EXPECT_THROW(cpu::blocking_from_config({{"fma", 2}}), UsageError);
  EXPECT_THROW(cpu::blocking_from_config({{"fma", -1}}), UsageError);
  EXPECT_THROW(cpu::blocking_from_config({{"fma", 1}}, DType::F32), UsageError);
  EXPECT_THROW(cpu::blocking_from_config({{"fma", 1}}, DType::F16), UsageError);
  EXPECT_EQ(cpu::blocking_from_config({{"fma", 1}}, DType::BF16).fma, 1);
  try {
    cpu::blocking_from_config({{"fma", 3}});
    ADD_FAILURE() << "fma 3 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'fma'"), std::string::npos) << e.what();
  }
  // Per ISA level: accepted for bf16 at the AVX-512 levels, a UsageError naming AVX-512 below.
  std::vector<float> w(16 * 8, 1.0f);
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(1, isa);
    if (is_avx512(isa)) {
      EXPECT_NO_THROW(be->make_linear(view_of(w, 16, 8), DType::BF16, {{"fma", 1}}));
    } else {
      try {
        be->make_linear(view_of(w, 16, 8), DType::BF16, {{"fma", 1}});
        ADD_FAILURE() << cpu::isa_name(isa) << " accepted fma 1";
      } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("AVX-512"), std::string::npos) << e.what();
      }
    }
    EXPECT_THROW(be->make_linear(view_of(w, 16, 8), DType::F32, {{"fma", 1}}), UsageError);
    // The same refusal where packed bytes are read back (a kernel cache hit, or bytes from
    // another process) with an fma 1 config: the bytes do not depend on it, the level does.
    const std::vector<std::byte> bytes(be->packed_size(16, 8, DType::BF16));
    auto read = [&](std::span<std::byte> dst) { return dst.size() == bytes.size(); };
    if (is_avx512(isa)) {
      EXPECT_NO_THROW(be->linear_from_packed(16, 8, DType::BF16, {{"fma", 1}}, bytes));
      EXPECT_NO_THROW(be->read_packed_linear(16, 8, DType::BF16, {{"fma", 1}}, read));
    } else {
      EXPECT_THROW(be->linear_from_packed(16, 8, DType::BF16, {{"fma", 1}}, bytes), UsageError);
      EXPECT_THROW(be->read_packed_linear(16, 8, DType::BF16, {{"fma", 1}}, read), UsageError);
    }
  }
  // The sweep's candidates and the defaults carry the key only where it applies.
  for (cpu::Isa isa : {cpu::Isa::Scalar, cpu::Isa::Avx2, cpu::Isa::Avx512, cpu::Isa::Avx512Bf16})
    for (DType dt : {DType::BF16, DType::F16, DType::F32}) {
      const bool applies = dt == DType::BF16 && is_avx512(isa);
      int with_fma = 0, without = 0;
      for (const TileConfig& c : cpu::candidate_tile_configs(isa, dt, true)) {
        EXPECT_NO_THROW(cpu::blocking_from_config(c, dt));
        (uses_fma(c) ? with_fma : without) += 1;
        if (applies) {
          EXPECT_EQ(c.count("fma"), 1u) << "candidate without an explicit fma key";
        }
      }
      EXPECT_EQ(with_fma > 0, applies) << cpu::isa_name(isa) << " " << dtype_name(dt);
      if (applies) {
        EXPECT_GT(without, 0) << "the vdpbf16ps / emulation path must stay a candidate";
      }
      for (const TileConfig& c : cpu::candidate_tile_configs(isa, dt, false))
        EXPECT_EQ(c.count("fma"), 0u);  // decode GEMV candidates
      const TileConfig d = cpu::default_tile_config(isa, dt, 1024, 1024);
      EXPECT_NO_THROW(cpu::blocking_from_config(d, dt));
      if (!applies) {
        EXPECT_EQ(d.count("fma"), 0u);
      }
    }
}

TEST(CpuLinear, PropagatesNanAndInf) {
  const int n = 20, k = 33;
  std::vector<float> w(static_cast<std::size_t>(n) * k, 0.5f);
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(1, isa);
    // bf16 twice at the AVX-512 levels: vdpbf16ps (or emulation) and the fp32-FMA GEMM.
    std::vector<std::pair<DType, TileConfig>> runs = {
        {DType::BF16, {}}, {DType::F16, {}}, {DType::F32, {}}};
    if (is_avx512(isa)) runs.push_back({DType::BF16, {{"fma", 1}, {"mr", 2}, {"np", 2}}});
    for (const auto& [dt, cfg] : runs) {
      auto cw = be->make_linear(view_of(w, n, k), dt, cfg);
      std::vector<float> x(static_cast<std::size_t>(2) * k, 1.0f);
      x[5] = std::nanf("");                     // row 0 -> NaN everywhere
      x[k + 7] = std::numeric_limits<float>::infinity();  // row 1 -> +inf everywhere
      std::vector<float> y(static_cast<std::size_t>(2) * n);
      be->linear(*cw, x.data(), 2, y.data());
      for (int j = 0; j < n; ++j) {
        const char* path = cfg.empty() ? "" : " fma";
        EXPECT_TRUE(std::isnan(y[j])) << cpu::isa_name(isa) << " " << dtype_name(dt) << path;
        EXPECT_TRUE(std::isinf(y[n + j]) && y[n + j] > 0) << cpu::isa_name(isa) << path;
      }
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(CpuLinear, RejectsBadTileConfigAndForeignWeight) {
  auto be = make_cpu_backend(1);
  std::vector<float> w(16 * 8, 1.0f);
  EXPECT_THROW(be->make_linear(view_of(w, 16, 8), DType::F32, {{"bogus", 4}}), UsageError);
  EXPECT_THROW(be->make_linear(view_of(w, 16, 8), DType::F32, {{"mr", 0}}), UsageError);
  auto ref = make_backend("reference");
  auto rw = ref->make_linear(view_of(w, 16, 8), DType::F32);
  std::vector<float> x(8, 1.0f), y(16);
  EXPECT_THROW(be->linear(*rw, x.data(), 1, y.data()), UsageError);
}

// The GEMM's A rows: the smallest odd number of 64-byte lines that holds k, so any 64
// consecutive rows map to 64 distinct sets of a 64-set L1D (what a 4 KiB stride, k = 2048
// bf16, does not: every row in one set).
TEST(CpuLinear, ARowStrideIsAnOddNumberOfCacheLines) {
  EXPECT_EQ(cpu::a_row_stride(2048, 2), 2080);  // 64 lines -> 65
  EXPECT_EQ(cpu::a_row_stride(1024, 4), 1040);  // 64 lines -> 65
  EXPECT_EQ(cpu::a_row_stride(3072, 2), 3104);  // 96 lines -> 97
  EXPECT_EQ(cpu::a_row_stride(1031, 4), 1040);  // 4124 B: 65 lines, odd already
  for (std::size_t esz : {2u, 4u})
    for (int k = 1; k <= 9000; ++k) {
      const int ld = cpu::a_row_stride(k, esz);
      const std::size_t bytes = ld * esz;
      ASSERT_GE(ld, k);
      ASSERT_EQ(bytes % 64, 0u) << k;
      ASSERT_LT(bytes, k * esz + 128) << k;  // at most one line past the rounded-up k
      std::vector<bool> set(64, false);
      for (int r = 0; r < 64; ++r) set[(r * bytes / 64) % 64] = true;
      ASSERT_EQ(std::count(set.begin(), set.end(), true), 64) << "k " << k << " esz " << esz;
    }
}

TEST(CpuLinear, EqualKBlockCutsKIntoTheFewestEqualPairedBlocks) {
  EXPECT_EQ(cpu::equal_k_block(1024, 3072), 1024);  // whole k
  EXPECT_EQ(cpu::equal_k_block(3072, 3072), 3072);
  EXPECT_EQ(cpu::equal_k_block(5632, 3072), 2816);  // 2 x 2816, not 3072 + 2560
  EXPECT_EQ(cpu::equal_k_block(8192, 3072), 2732);  // 3 blocks: 2732 + 2732 + 2728
  EXPECT_EQ(cpu::equal_k_block(1023, 3072), 1024);  // a whole k pair
  EXPECT_EQ(cpu::equal_k_block(0, 3072), 3072);
  for (int max_kc : {2, 64, 512, 3072})
    for (int k = 1; k <= 9000; k += 7) {
      const int kc = cpu::equal_k_block(k, max_kc);
      const int blocks = (k + max_kc - 1) / max_kc;  // the fewest blocks of <= max_kc
      ASSERT_EQ(kc % 2, 0) << k;
      ASSERT_LE(kc, max_kc + max_kc % 2) << k;
      ASSERT_GE(static_cast<long>(kc) * blocks, k) << k;       // the blocks cover k
      ASSERT_LT(static_cast<long>(kc) * (blocks - 1), k) << k;  // and none is empty
      ASSERT_LE(kc, (k + blocks - 1) / blocks + 1) << k;        // and they are equal
    }
}

TEST(CpuLinear, PackedBytesAreOwnedAndCounted) {
  auto be = make_cpu_backend(1);
  std::vector<float> w(33 * 70, 1.0f);
  auto cw = be->make_linear(view_of(w, 33, 70), DType::BF16);
  // 3 panels x 16 columns x 70 k x 2 bytes.
  EXPECT_EQ(cw->bytes(), 3u * 16 * 70 * 2);
  std::vector<float> x(70, 1.0f), y(33);
  be->reset_counters();
  be->linear(*cw, x.data(), 1, y.data());
  EXPECT_EQ(be->counters().calls.at("cpu/" + be->isa() + ":gemv"), 1u);
  EXPECT_FALSE(any_reference_dispatch(be->counters().calls));
  for (float v : y) EXPECT_FLOAT_EQ(v, 70.0f);
}

}  // namespace
}  // namespace llmport::test

namespace llmport::test {
namespace {

// Decode streams every weight from DRAM once per token; from 2 MiB on (qwen3-0.6b's and
// llama-3.2-1b's k and v weights are exactly 2 MiB) the packed panels start on a 2 MiB
// boundary so that transparent huge pages can back them (docs/performance.md), bf16 and
// q8_0 alike; smaller ones are 64-byte aligned.
TEST(CpuLinear, WeightsOfTwoMiBStartOnAHugePageBoundary) {
  auto be = make_cpu_backend(1);
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  std::vector<float> w(1024 * 1024, 0.25f);
  const auto bf16 = be->make_linear(view_of(w, 1024, 1024), DType::BF16);  // 2 MiB packed
  ASSERT_EQ(bf16->bytes(), std::size_t{2} << 20);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(bf16->packed().data()) % kHuge, 0u);
  const auto small = be->make_linear(view_of(w, 512, 1024), DType::BF16);  // 1 MiB
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small->packed().data()) % 64, 0u);
  std::vector<float> wq(2048 * 1024, 0.25f);  // q8_0: 2048 x 1024 x 34 / 32 bytes > 2 MiB
  const auto q8 = be->make_quantized_linear(view_of(wq, 2048, 1024), QuantType::Q8_0, {});
  ASSERT_GE(q8->bytes(), std::size_t{2} << 20);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q8->packed().data()) % kHuge, 0u);
}

}  // namespace
}  // namespace llmport::test
