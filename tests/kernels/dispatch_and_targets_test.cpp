// Issue #13 findings 4, 6 and 9 on the kernel side: dispatch counters name the
// implementation that served each call (so "no reference fallback" can fire), the cpu
// backend without a config packs with the one heuristic default the reports name, and the
// targets that are not built in say why.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu_test_util.hpp"
#include "llmport/error.hpp"
#include "llmport/kernels.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {

TEST(DispatchCounters, NameTheImplementationAndFlagReferenceCalls) {
  std::vector<float> w(32 * 16, 0.25f), x(3 * 16, 1.0f), y(3 * 32);
  auto ref = make_backend("reference");
  auto rw = ref->make_linear(view_of(w, 32, 16), DType::BF16);
  ref->linear(*rw, x.data(), 3, y.data());
  ref->linear(*rw, x.data(), 1, y.data());
  EXPECT_EQ(ref->counters().calls.at("reference:gemm"), 1u);
  EXPECT_EQ(ref->counters().calls.at("reference:gemv"), 1u);
  EXPECT_TRUE(any_reference_dispatch(ref->counters().calls));
  for (cpu::Isa isa : cpu::supported_isas()) {
    auto be = cpu::make_cpu_backend_isa(1, isa);
    auto cw = be->make_linear(view_of(w, 32, 16), DType::BF16);
    be->linear(*cw, x.data(), 1, y.data());
    std::vector<float> h(16);
    be->swiglu(x.data(), x.data(), h.data(), 16);
    const std::string impl = std::string("cpu/") + cpu::isa_name(isa);
    EXPECT_EQ(be->counters().calls.at(impl + ":gemv"), 1u);
    EXPECT_EQ(be->counters().calls.at(impl + ":swiglu"), 1u);
    EXPECT_EQ(dispatch_implementation(impl + ":gemv"), impl);
    EXPECT_FALSE(any_reference_dispatch(be->counters().calls));
    // One call served by the reference among the cpu's: the audit's fallback fires.
    auto mixed = be->counters().calls;
    mixed["reference:rmsnorm"] = 1;
    EXPECT_TRUE(any_reference_dispatch(mixed));
  }
  EXPECT_FALSE(any_reference_dispatch({{"reference:gemv", 0}}));
}

// Issue #13 finding 6: one heuristic default. A weight made without a config is packed
// with cpu::default_tile_config, the config KernelSelection and the reports name.
TEST(HeuristicDefault, NoConfigPacksWithTheReportedDefault) {
  std::vector<float> w(48 * 40, 0.5f);
  for (cpu::Isa isa : cpu::supported_isas())
    for (DType dt : {DType::BF16, DType::F16, DType::F32}) {
      auto be = cpu::make_cpu_backend_isa(1, isa);
      auto lw = be->make_linear(view_of(w, 48, 40), dt);
      EXPECT_EQ(lw->config, cpu::default_tile_config(isa, dt, 48, 40)) << cpu::isa_name(isa);
      const auto& blk = dynamic_cast<const cpu::CpuLinear&>(*lw).blocking();
      EXPECT_EQ(blk.mr, cpu::default_tile_config(isa, dt, 48, 40).at("mr"));
    }
}

// A thread count is 0 (every core) or 1..4 x the hardware threads; a negative one is refused
// with the one wording every backend uses, not read as "every core" (it once was).
TEST(Targets, ThreadCountsResolveOrAreRefused) {
  EXPECT_EQ(resolve_backend_threads(1), 1);
  EXPECT_GE(resolve_backend_threads(0), 1);
  EXPECT_EQ(resolve_backend_threads(max_backend_threads()), max_backend_threads());
  for (const int bad : {-1, -4, max_backend_threads() + 1}) {
    try {
      resolve_backend_threads(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("threads: " + std::to_string(bad) + " is ", 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(make_backend("cpu", -2), UsageError);
}

TEST(Targets, OnlyBuiltInOnesAndClearMessagesForTheOthers) {
  EXPECT_EQ(available_backends(), (std::vector<std::string>{"reference", "cpu"}));
  try {
    make_backend("cuda");
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA backend exists yet in llmport (built-in targets: cpu)"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.exit_code(), 2);
  }
  for (const char* npu : {"npu1", "npu2"}) {
    try {
      make_backend(npu);
      FAIL() << "no throw";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("NPU targets are out of llmport's scope (no XRT backend)"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(missing_target_message("cpu"), "");
  EXPECT_EQ(missing_target_message("tpu"), "");
}

TEST(Targets, DeployTargetMessagesExit2) {
  const std::string model = shared_path("models/stories260K").string();
  TempDir dir;
  const auto cuda = run_llmport({"deploy", model, "--target", "cuda", "--workspace", dir.path().string()});
  EXPECT_EQ(cuda.exit_code, 2) << cuda.err;
  EXPECT_NE(cuda.err.find("no CUDA backend exists yet in llmport (built-in targets: cpu)"), std::string::npos)
      << cuda.err;
  const auto npu = run_llmport({"deploy", model, "--target", "npu2", "--workspace", dir.path().string()});
  EXPECT_EQ(npu.exit_code, 2) << npu.err;
  EXPECT_NE(npu.err.find("NPU targets are out of llmport's scope (no XRT backend)"), std::string::npos) << npu.err;
  const auto help = run_llmport({"deploy", "--help"});
  EXPECT_EQ(help.out.find("cuda|"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace llmport::test
