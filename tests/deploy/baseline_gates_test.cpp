// Phase 0 (reference baseline) fails on each of its gates: the fp32 reference's logits on
// the first prompt NaN/inf from finite weights, degenerate (the top-5 all equal), or a
// top-1 outside the golden's top-5; a NaN stored in a weight blocks it as bad input, and a
// directory without weights is refused before a workspace exists.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "llmport/records.hpp"
#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using llmport::test::read_file;
using llmport::test::RunResult;
using llmport::test::shared_path;
using llmport::test::TempDir;
using nlohmann::json;

fs::path golden_file() { return shared_path("models/stories260K/golden/public.json"); }

RunResult deploy_phase0(const fs::path& model, const fs::path& golden, const fs::path& ws) {
  return llmport::test::deploy_quick({model.string(), "--reference", "golden:" + golden.string(), "--workspace",
                                      ws.string(), "--name", "m", "--last-phase", "0"});
}

json phase0(const fs::path& ws) { return json::parse(read_file(ws / "m" / "deployment.json"))["phases"][0]; }

TEST(BaselineGates, NonFiniteOrDegenerateReferenceLogitsFailPhaseZero) {
  TempDir t;
  // One NaN stored in the final norm: a damaged model file, bad input naming the tensor
  // (BLOCKED, exit 2), not the model's failure.
  const fs::path nan = t.path() / "nan";
  llmport::test::copy_stories_with_nan(nan, "model.norm.weight");
  RunResult r = deploy_phase0(nan, golden_file(), t.path() / "ws_nan");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(phase0(t.path() / "ws_nan")["status"], "BLOCKED");
  EXPECT_EQ(phase0(t.path() / "ws_nan")["reason"], "model checks: " + (nan / "model.safetensors").string() +
                                                       ": model.norm.weight: 1 NaN/Inf values (1 NaN/Inf, 0 "
                                                       "overflowing in all tensors)");

  // Every weight finite and under sqrt(FLT_MAX), yet layer 0's queries and keys overflow
  // (norm and projections at 1.5e19): the scores are inf, the softmax NaN. The model
  // itself fails.
  const fs::path overflow = t.path() / "overflow";
  llmport::test::copy_stories(overflow);
  for (const char* name : {"model.layers.0.input_layernorm.weight", "model.layers.0.self_attn.q_proj.weight",
                           "model.layers.0.self_attn.k_proj.weight"})
    llmport::test::edit_f32_tensor(overflow / "model.safetensors", name, [](float& v, std::size_t) { v = 1.5e19f; });
  r = deploy_phase0(overflow, golden_file(), t.path() / "ws_overflow");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(phase0(t.path() / "ws_overflow")["status"], "FAIL");
  EXPECT_EQ(phase0(t.path() / "ws_overflow")["reason"], "the fp32 reference produced NaN/inf logits on the first prompt");

  // A zero final norm: every logit is 0, so no token is the model's choice.
  const fs::path flat = t.path() / "flat";
  llmport::test::copy_stories(flat);
  llmport::test::edit_f32_tensor(flat / "model.safetensors", "model.norm.weight", [](float& v, std::size_t) { v = 0; });
  r = deploy_phase0(flat, golden_file(), t.path() / "ws_flat");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(phase0(t.path() / "ws_flat")["status"], "FAIL");
  EXPECT_EQ(phase0(t.path() / "ws_flat")["reason"], "degenerate logits: the top-5 are all equal");
}

TEST(BaselineGates, AReferenceTopOneOutsideTheGoldensTopFiveFailsPhaseZero) {
  TempDir t;
  llmport::RecordFile g = llmport::read_record_file(golden_file());
  ASSERT_FALSE(g.sequences.empty());
  llmport::StepRecord& s0 = g.sequences[0].steps.at(0);
  const int model_top1 = s0.token;
  // A golden that agrees with itself but names other tokens at the first step: every id of
  // its top list moved past the model's choice (full logits dropped, so nothing contradicts).
  for (auto& e : s0.top) e.id = (e.id + 7) % 512 == model_top1 ? (e.id + 8) % 512 : (e.id + 7) % 512;
  ASSERT_TRUE(std::none_of(s0.top.begin(), s0.top.end(), [&](const auto& e) { return e.id == model_top1; }));
  s0.token = s0.top.front().id;
  s0.logits.clear();
  const fs::path golden = t.path() / "golden.json";
  llmport::write_record_file(golden, g);
  const RunResult r = deploy_phase0(shared_path("models/stories260K"), golden, t.path() / "ws");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(phase0(t.path() / "ws")["status"], "FAIL");
  EXPECT_EQ(phase0(t.path() / "ws")["reason"], "reference top-1 " + std::to_string(model_top1) +
                                                   " is not in the golden top-5 of '" + g.sequences[0].name + "'");
}

// A directory holding a config but no weights is bad input found before anything is
// written (it used to create a workspace and BLOCK phase 0 in it).
TEST(BaselineGates, AModelDirectoryWithoutWeightsIsRefusedBeforeAWorkspaceExists) {
  TempDir t;
  const fs::path model = t.path() / "config-only";
  fs::create_directories(model);
  fs::copy_file(shared_path("models/stories260K/config.json"), model / "config.json");
  const RunResult r = deploy_phase0(model, golden_file(), t.path() / "ws");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(model.string() + ": no model.safetensors or model.safetensors.index.json"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(t.path() / "ws" / "m"));
}

}  // namespace
