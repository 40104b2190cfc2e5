// Phases 4 and 5 prove correctness on the configs they tuned before any timing: an engine
// that departs from the reference there (a planted logit fault, given on the resume) FAILs
// the phase naming the verify that failed, and the next phase cannot start.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using llmport::test::read_file;
using llmport::test::run_llmport;
using llmport::test::RunResult;
using llmport::test::shared_path;
using llmport::test::TempDir;
using nlohmann::json;

RunResult deploy(const fs::path& ws, const std::vector<std::string>& more) {
  std::vector<std::string> a = {shared_path("models/stories260K").string(), "--workspace", ws.string()};
  a.insert(a.end(), more.begin(), more.end());
  return llmport::test::deploy_quick(a);
}

TEST(TuningGates, AnEngineDepartingOnTheTunedConfigsFailsPhasesFourAndFive) {
  TempDir t;
  const fs::path ws = t.path() / "ws";
  const fs::path manifest = ws / "stories260k" / "deployment.json";
  ASSERT_EQ(deploy(ws, {"--reference", "golden:" + shared_path("models/stories260K/golden/public.json").string(),
                        "--last-phase", "3"})
                .exit_code,
            0);
  for (const int phase : {4, 5}) {
    SCOPED_TRACE(phase);
    const std::string p = std::to_string(phase);
    const RunResult faulted = deploy(ws, {"--from-phase", p, "--last-phase", p, "--inject-fault", "logit_scale=1.5"});
    EXPECT_EQ(faulted.exit_code, 1) << faulted.out << faulted.err;
    const json ph = json::parse(read_file(manifest))["phases"][phase];
    EXPECT_EQ(ph["status"], "FAIL");
    EXPECT_EQ(ph["reason"].get<std::string>().rfind("correctness with the tuned configs: verify FAIL: ", 0), 0u)
        << ph["reason"];
    EXPECT_FALSE(ph["numbers"].contains("timing")) << "timed an engine that failed its verify";
    // Phase 5 starts only after phase 4 passed: pass it without the fault.
    if (phase == 4) {
      ASSERT_EQ(deploy(ws, {"--from-phase", "4", "--last-phase", "4"}).exit_code, 0);
    }
  }
}

// regress re-verifies with files whose hashes still match: the verify itself can fail it
// (here a bound the deployment's own figures cannot meet, as a stricter bound written into
// deployment.json would be), exit 1 naming what failed.
TEST(TuningGates, RegressFailsWhenTheReverifyFailsThoughNoFileChanged) {
  TempDir t;
  const fs::path ws = t.path() / "ws";
  const fs::path manifest = ws / "stories260k" / "deployment.json";
  ASSERT_EQ(deploy(ws, {"--reference", "golden:" + shared_path("models/stories260K/golden/public.json").string()})
                .exit_code,
            0);
  RunResult r = run_llmport({"regress", "--workspace", ws.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json m = json::parse(read_file(manifest));
  m["verify"]["kl_bound"] = 1e-30;
  llmport::test::write_file(manifest, m.dump(2));
  r = run_llmport({"regress", "--workspace", ws.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL: 8 prompts x 32 steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(bound 1e-30)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("regress: 1 of 1 deployments FAIL or unreadable"), std::string::npos) << r.out;
}

}  // namespace
