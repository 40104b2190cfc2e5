// CPU GEMM/GEMV vs the reference backend, every ISA level this machine runs, every dtype,
// odd shapes (M = 1, 3, 17; K, N not multiples of the tile), several tile configs.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/backend_impls.hpp"
#include "llmport/error.hpp"
#include "kernels/cpu_test_util.hpp"

namespace llmport::test {
namespace {

TensorView view_of(const std::vector<float>& w, int n, int k) {
  TensorView v;
  v.dtype = DType::F32;
  v.shape = {n, k};
  v.data = w.data();
  v.nbytes = w.size() * 4;
  return v;
}

struct Shape {
  int n, k;
};

TEST(CpuLinear, MatchesReferenceAllIsasDtypesShapes) {
  auto ref = make_backend("reference");
  const std::vector<Shape> shapes = {{33, 70}, {16, 64}, {100, 257}, {47, 1031}, {300, 129}};
  const std::vector<TileConfig> configs = {
      {},  // the backend's defaults
      {{"mr", 5}, {"np", 4}, {"kc", 64}, {"mc", 10}, {"nc", 48}, {"gnp", 2}},
      {{"mr", 3}, {"np", 1}, {"kc", 30}, {"mc", 7}, {"nc", 16}, {"gnp", 1}},
  };
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(2, isa);
    for (DType dt : {DType::BF16, DType::F16, DType::F32})
      for (const Shape& s : shapes) {
        const auto w = random_vec(static_cast<std::size_t>(s.n) * s.k, 1.0f / std::sqrt(s.k), 1u + s.n);
        const auto bias = random_vec(s.n, 0.5f, 7u);
        auto rw = ref->make_linear(view_of(w, s.n, s.k), dt);
        for (const TileConfig& cfg : configs) {
          auto cw = be->make_linear(view_of(w, s.n, s.k), dt, cfg);
          for (int m : {1, 3, 17})
            for (bool with_bias : {false, true}) {
              auto x = random_vec(static_cast<std::size_t>(m) * s.k, 1.0f, 3u + m);
              // The kernel multiplies bf16 x bf16; the reference gets the same rounded x.
              std::vector<float> xr(x.size());
              round_through(dt == DType::BF16 ? DType::BF16 : DType::F32, x.data(), xr.data(),
                            x.size());
              Guarded got(static_cast<std::size_t>(m) * s.n), want(static_cast<std::size_t>(m) * s.n);
              const float* b = with_bias ? bias.data() : nullptr;
              be->linear(*cw, x.data(), m, got.data(), b);
              ref->linear(*rw, xr.data(), m, want.data(), b);
              const std::string what = std::string(cpu::isa_name(isa)) + " " +
                                       std::string(dtype_name(dt)) + " m=" + std::to_string(m) +
                                       " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k);
              EXPECT_TRUE(got.guards_intact()) << what << ": out-of-bounds write";
              EXPECT_EQ(compare(got.data(), want.data(), got.size(),
                                tol_for(m == 1 ? "gemv" : "gemm", dt), what),
                        0);
              ++cases;
            }
        }
      }
  }
  EXPECT_GT(cases, 0) << "no ISA level ran";
}

TEST(CpuLinear, PropagatesNanAndInf) {
  const int n = 20, k = 33;
  std::vector<float> w(static_cast<std::size_t>(n) * k, 0.5f);
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(1, isa);
    for (DType dt : {DType::BF16, DType::F16, DType::F32}) {
      auto cw = be->make_linear(view_of(w, n, k), dt);
      std::vector<float> x(static_cast<std::size_t>(2) * k, 1.0f);
      x[5] = std::nanf("");                     // row 0 -> NaN everywhere
      x[k + 7] = std::numeric_limits<float>::infinity();  // row 1 -> +inf everywhere
      std::vector<float> y(static_cast<std::size_t>(2) * n);
      be->linear(*cw, x.data(), 2, y.data());
      for (int j = 0; j < n; ++j) {
        EXPECT_TRUE(std::isnan(y[j])) << cpu::isa_name(isa) << " " << dtype_name(dt);
        EXPECT_TRUE(std::isinf(y[n + j]) && y[n + j] > 0) << cpu::isa_name(isa);
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

TEST(CpuLinear, PackedBytesAreOwnedAndCounted) {
  auto be = make_cpu_backend(1);
  std::vector<float> w(33 * 70, 1.0f);
  auto cw = be->make_linear(view_of(w, 33, 70), DType::BF16);
  // 3 panels x 16 columns x 70 k x 2 bytes.
  EXPECT_EQ(cw->bytes(), 3u * 16 * 70 * 2);
  std::vector<float> x(70, 1.0f), y(33);
  be->reset_counters();
  be->linear(*cw, x.data(), 1, y.data());
  EXPECT_EQ(be->counters().calls.at("gemv"), 1u);
  for (float v : y) EXPECT_FLOAT_EQ(v, 70.0f);
}

}  // namespace
}  // namespace llmport::test
