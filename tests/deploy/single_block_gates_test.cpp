// Phase 2 (single block) FAILs when a golden's layer-0 record departs from the engine and
// none of the golden's own records contradicts it (its BLOCKED side, the golden
// contradicting itself, is DeployPipeline.AGoldenWithAScaledLayerZeroStopsAtPhaseTwo). Here
// the golden is the one made wrong, but in a way no record of its own can tell (the final
// norm removes a scale of the residual stream): the deployment stops, which is what a
// departure from the reference must do; whose fault it is stays open
// (docs/verification.md, "a scaled last layer").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmport/records.hpp"
#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using llmport::test::read_file;
using llmport::test::shared_path;
using llmport::test::TempDir;
using nlohmann::json;

TEST(SingleBlockGates, AGoldenWhoseEveryLayerDepartsFailsPhaseTwoAsTheEngines) {
  TempDir t;
  llmport::RecordFile g = llmport::read_record_file(shared_path("models/stories260K/golden/public.json"));
  // Every layer's output x1.1 in every sequence, the embedding and the final norm (which
  // removes the scale) as recorded: no record contradicts the next one, so nothing says
  // the golden is damaged, and layer 0 departs from the engine.
  for (auto& s : g.sequences)
    for (auto& layer : s.hidden.layer_out)
      for (float& x : layer) x *= 1.1f;
  const fs::path golden = t.path() / "golden.json";
  llmport::write_record_file(golden, g);
  const fs::path ws = t.path() / "ws";
  const auto r = llmport::test::deploy_quick({shared_path("models/stories260K").string(), "--reference",
                                              "golden:" + golden.string(), "--workspace", ws.string(),
                                              "--last-phase", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json ph = json::parse(read_file(ws / "stories260k" / "deployment.json"))["phases"][2];
  EXPECT_EQ(ph["status"], "FAIL");
  EXPECT_EQ(ph["reason"].get<std::string>().rfind("layer 0 vs the golden (" + std::to_string(g.sequences.size()) +
                                                  " sequences; ",
                                                  0),
            0u)
      << ph["reason"];
  EXPECT_NE(ph["reason"].get<std::string>().find("relative error 0.09091 (<= 0.004)"), std::string::npos)
      << ph["reason"];
}

}  // namespace
