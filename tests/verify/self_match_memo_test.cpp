// verify keeps what each of its self-match computations found for the life of the process
// (verify/self_match_memo.hpp): a deploy's phases 3-6 verify the same weights and golden.
// A kept finding may serve only a verify of the same content: a golden forged from the
// oracle of stories260K is caught on its weights, and neither a verify of other weights nor
// of another config.json in the same directory (same paths, same sizes) may answer for it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmport/engine.hpp"
#include "llmport/model_config.hpp"
#include "llmport/runner.hpp"
#include "llmport/verify.hpp"
#include "llmport/weights.hpp"
#include "verify/self_match_memo.hpp"
#include "verify/verify_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using verify_detail::SelfMatchMemo;

// A golden whose every step is stories260K's oracle output, labelled independent.
fs::path oracle_forgery(const fs::path& out) {
  const ModelConfig cfg = load_model_config(test::stories_dir());
  const WeightStore w = WeightStore::open(test::stories_dir(), cfg);
  auto oracle = make_oracle_runner(cfg, w, 1);
  return test::forged_stories_golden(out, *oracle, false, 2);
}

bool caught_as_oracle_copy(const VerifyResult& r) {
  return !r.reference_independent && r.independence_finding.find("oracle") != std::string::npos;
}

TEST(SelfMatchMemo, ASecondVerifyOfTheSameWeightsAndGoldenReusesEveryComputation) {
  TempDir t;
  const fs::path golden = oracle_forgery(t.path() / "forged.json");
  const VerifyResult first = test::verify_golden(test::stories_dir(), golden);
  ASSERT_TRUE(caught_as_oracle_copy(first)) << first.independence_finding;
  const int64_t hits = SelfMatchMemo::process().hits(), misses = SelfMatchMemo::process().misses();
  const VerifyResult second = test::verify_golden(test::stories_dir(), golden);
  EXPECT_EQ(SelfMatchMemo::process().misses(), misses);
  // The oracle and fp32/bf16/fp16 at each level, on both paths (the engine's own decode
  // path counted by the gate's run): more than a dozen computations.
  EXPECT_GT(SelfMatchMemo::process().hits() - hits, 12);
  EXPECT_EQ(second.independence_finding, first.independence_finding);
  ASSERT_EQ(second.self_matches.size(), first.self_matches.size());
  for (std::size_t i = 0; i < first.self_matches.size(); ++i) {
    EXPECT_EQ(second.self_matches[i].against, first.self_matches[i].against);
    EXPECT_EQ(second.self_matches[i].identical, first.self_matches[i].identical);
    EXPECT_EQ(second.self_matches[i].compared, first.self_matches[i].compared);
  }
  ASSERT_EQ(second.self_match_steps.size(), first.self_match_steps.size());
  for (std::size_t i = 0; i < first.self_match_steps.size(); ++i)
    EXPECT_EQ(second.self_match_steps[i].identical, first.self_match_steps[i].identical);
}

// The same directory first holds other weights (final norm x1.5) or another config.json
// (rms_norm_eps 1e-5 -> 1e-3): llmport's computations there match nothing of the golden.
// Restored, the golden is the oracle's output again and must be caught: a finding kept
// under the directory, the file sizes or the golden alone would say "independent".
TEST(SelfMatchMemo, OtherWeightsOrConfigInTheSameDirectoryAreComputedAfresh) {
  TempDir t;
  const fs::path golden = oracle_forgery(t.path() / "forged.json");
  const std::string weights = test::read_file(test::stories_dir() / "model.safetensors");
  const std::string config = test::read_file(test::stories_dir() / "config.json");
  for (const std::string change : {"weights", "config"}) {
    SCOPED_TRACE(change);
    const fs::path model = test::copy_stories(t.path() / change);
    if (change == "weights") {
      test::edit_f32_tensor(model / "model.safetensors", "model.norm.weight", [](float& v, std::size_t) { v *= 1.5f; });
    } else {
      nlohmann::json c = nlohmann::json::parse(config);
      ASSERT_EQ(c.at("rms_norm_eps"), 1e-5);
      c["rms_norm_eps"] = 1e-3;
      test::write_file(model / "config.json", c.dump());
    }
    const VerifyResult other = test::verify_golden(model, golden);
    EXPECT_TRUE(other.independence_finding.empty()) << other.independence_finding;
    test::write_file(model / "model.safetensors", weights);
    test::write_file(model / "config.json", config);
    const VerifyResult restored = test::verify_golden(model, golden);
    EXPECT_TRUE(caught_as_oracle_copy(restored)) << restored.independence_finding;
  }
}

}  // namespace
}  // namespace llmport
