// A NaN weight must stop `llmport run` and `llmport bench` with a clear check failure
// (exit 1), never emit ids or timings; argmax and top-k agree on the best id even when the
// logits hold NaN.
#include <cstring>
#include <limits>

#include "llmport/error.hpp"
#include "llmport/generate.hpp"
#include "llmport/sampler.hpp"
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace {

TEST(NonFiniteLogits, RunFailsWithExit1AndNamesStepAndPosition) {
  TempDir t;
  copy_stories_with_nan(t.path(), "model.norm.weight");
  for (const std::string backend : {"reference", "cpu"}) {
    SCOPED_TRACE(backend);
    for (const bool json : {false, true}) {
      std::vector<std::string> args = {"run", t.path().string(), "--prompt", "Once upon a time",
                                       "--n-tokens", "4", "--backend", backend};
      if (json) args.push_back("--json");
      const auto r = run_llmport(args);
      EXPECT_EQ(r.exit_code, 1) << r.err;
      EXPECT_NE(r.err.find("error: non-finite logits at step 0 (position "), std::string::npos) << r.err;
      EXPECT_EQ(r.out.find("generated_ids"), std::string::npos) << r.out;
      // Streamed text ends its line, so `error: ...` (stderr) starts on its own line.
      if (!json) {
        EXPECT_EQ(r.out, "Once upon a time\n");
      }
    }
  }
}

// A weight whose square overflows fp32 (1e30 in a down_proj) zeroes the hidden state at the
// next RMSNorm: every logit is 0 and greedy printed id 0 for ever with exit 0. All logits
// one value is a check failure too.
TEST(NonFiniteLogits, AllLogitsEqualIsACheckFailureNotSilentGarbage) {
  TempDir t;
  copy_stories(t.path());
  edit_f32_tensor(t.path() / "model.safetensors", "model.layers.0.mlp.down_proj.weight", [](float& v, std::size_t i) {
    if (i == 0) v = 1e30f;
  });
  const auto r = run_llmport({"run", t.path().string(), "--prompt", "Once upon a time", "--n-tokens", "4"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("error: degenerate logits at step 0 (position 4): all 512 values are 0, so every id is equally "
                       "likely"),
            std::string::npos)
      << r.err;
  const std::vector<float> constant(8, 2.5f);
  try {
    check_finite_logits(constant, 3, 9);
    ADD_FAILURE() << "accepted";
  } catch (const GateError& e) {
    EXPECT_NE(std::string(e.what()).find("all 8 values are 2.5"), std::string::npos) << e.what();
  }
  const std::vector<float> varied{2.5f, 2.5f, 2.5000002f};
  EXPECT_NO_THROW(check_finite_logits(varied, 0, 0));
}

// bench checks its warmup's logits before timing anything: a broken model's speed is not
// reported as if it worked (before: exit 0, a normal table).
TEST(NonFiniteLogits, BenchFailsWithExit1BeforeTiming) {
  TempDir t;
  copy_stories_with_nan(t.path(), "model.norm.weight");
  for (const std::string format : {"md", "json"}) {
    SCOPED_TRACE(format);
    const auto r = run_llmport({"bench", t.path().string(), "-p", "16", "-n", "4", "-r", "1",
                                "--no-roofline", "-o", format});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("error: non-finite logits at step 0 (position 7)"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("pp16"), std::string::npos) << r.out;
  }
}

// verify's KL failure line says where the KL came from; on NaN logits it says that, not
// placeholder figures ("differ by up to -1 (id -1)", rest masses "nan").
TEST(NonFiniteLogits, VerifySaysTheLogitsHoldNaNInsteadOfPlaceholderFigures) {
  TempDir t;
  copy_stories_with_nan(t.path(), "model.norm.weight");
  const auto r = run_llmport({"verify", t.path().string(), "--reference",
                              "golden:" + shared_path("models/stories260K/golden/public.json").string(),
                              "--threads", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("; the engine's logits hold NaN/inf here)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("(id -1)"), std::string::npos) << r.out;
}

TEST(NonFiniteLogits, ArgmaxAgreesWithTopKWhenLogitsHoldNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<float>> cases = {
      {nan, 1.f, 3.f, 2.f}, {1.f, nan, 0.5f, 7.f}, {nan, nan, -1.f, -2.f}, {2.f, 2.f, nan, 1.f}};
  const std::vector<int> want = {2, 3, 2, 0};
  for (std::size_t c = 0; c < cases.size(); ++c) {
    EXPECT_EQ(argmax(cases[c]), want[c]) << c;
    const auto top = top_k_logits(cases[c], 2);
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0].first, want[c]) << c;
    Sampler greedy(SamplingParams{});
    EXPECT_EQ(greedy.sample(cases[c], {}), want[c]) << c;
  }
}

}  // namespace
}  // namespace llmport::test
