// Issue #13 finding 6 (acceptance): registry entries carry the fingerprint of the machine
// that measured them; entries planted with a foreign fingerprint are skipped by `run`,
// `verify` and `bench`, each saying so in one stderr line, and heuristic defaults serve.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace llmport::test {
namespace {

namespace fs = std::filesystem;

int count_of(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// Rewrites every entry's fingerprint as one measured on another machine: a Zen 4 EPYC, or
// on an AMD host (which may be that very Zen 4) a Sapphire Rapids Xeon. Returns the
// machine's description as the skip line names it.
std::string plant_foreign_fingerprints(const fs::path& dir) {
  std::string planted;
  for (const auto& de : fs::directory_iterator(dir)) {
    if (de.path().extension() != ".json") continue;
    nlohmann::json j = nlohmann::json::parse(read_file(de.path()));
    for (auto& e : j["entries"]) {
      auto& f = e["provenance"]["fingerprint"];
      EXPECT_TRUE(f.is_object()) << "sweep wrote no fingerprint: " << e.dump();
      if (!f.is_object()) return planted;
      const bool amd_here = f.value("vendor", "") == "AuthenticAMD";
      f["vendor"] = amd_here ? "GenuineIntel" : "AuthenticAMD";
      f["family"] = amd_here ? 6 : 25;
      f["model"] = amd_here ? 143 : 17;
      f["stepping"] = amd_here ? 8 : 1;
      f["id"] = "planted";
      planted = amd_here ? "GenuineIntel family 6 model 143" : "AuthenticAMD family 25 model 17";
    }
    std::ofstream(de.path(), std::ios::trunc) << j.dump(1);
  }
  return planted;
}

TEST(ForeignRegistry, RunVerifyBenchSkipForeignEntriesInOneLineAndUseHeuristics) {
  const std::string model = shared_path("models/stories260K").string();
  TempDir dir;
  const std::string reg = (dir.path() / "reg").string();
  for (const char* mode : {"--prefill", "--decode"}) {
    const auto s = run_llmport({"kernels", "sweep", model, mode, "--registry", reg, "-t", "2", "--reps", "1",
                                "--dtype", "bf16"});
    ASSERT_EQ(s.exit_code, 0) << s.err << s.out;
  }
  // Measured here: every linear shape from the registry, nothing skipped.
  const std::vector<std::string> run_args{"run", model, "--prompt", "Once upon a time", "--n-tokens", "4",
                                          "--temperature", "0", "-t", "2", "--profile", "--dtype", "bf16",
                                          "--registry", reg};
  const auto here = run_llmport(run_args);
  ASSERT_EQ(here.exit_code, 0) << here.err;
  EXPECT_EQ(count_of(here.err, "skipped"), 0) << here.err;
  EXPECT_NE(here.err.find("every linear shape from the registry"), std::string::npos) << here.err;
  EXPECT_EQ(count_of(here.err, "registry:"), 0) << here.err;

  const std::string skipped = "entries skipped: measured on " + plant_foreign_fingerprints(dir.path() / "reg");
  const auto run = run_llmport(run_args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(count_of(run.err, skipped), 1) << run.err;
  EXPECT_EQ(count_of(run.err, "'llmport kernels sweep MODEL --prefill --registry DIR' (then --decode) tunes here"), 1) << run.err;
  EXPECT_EQ(count_of(run.err, "linear shape(s) not measured on this machine"), 1) << run.err;
  EXPECT_EQ(run.err.find("every linear shape from the registry"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("ran with the heuristic default config"), std::string::npos) << run.err;

  const auto verify = run_llmport({"verify", model, "--reference",
                                   "golden:" + (fs::path(model) / "golden" / "public.json").string(),
                                   "--dtype", "bf16", "--threads", "2", "--registry", reg,
                                   "--report-dir", (dir.path() / "rep").string()});
  EXPECT_EQ(count_of(verify.err, skipped), 1) << verify.err << verify.out;

  const auto bench = run_llmport({"bench", model, "-p", "8", "-n", "4", "-r", "1", "-t", "2", "--no-roofline", "--dtype", "bf16",
                                  "--registry", reg});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_EQ(count_of(bench.err, skipped), 1) << bench.err;
  EXPECT_NE(bench.out.find("ran with the heuristic default config"), std::string::npos) << bench.out;
}

}  // namespace
}  // namespace llmport::test
