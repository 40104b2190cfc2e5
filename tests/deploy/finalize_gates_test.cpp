// Phase 6 (finalize) fails on each of its gates: a manifest missing what phases 1-5
// recorded, a README without a measured figure, and the user's own `make verify` failing.
// Each is reached by resuming a finished deployment at phase 6 after taking one thing away.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "llmport/deploy.hpp"
#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using llmport::test::read_file;
using llmport::test::shared_path;
using llmport::test::TempDir;
using llmport::test::write_file;
using nlohmann::json;

struct Resumed {
  int exit_code = 0;
  std::string out;
  json manifest;
};

llmport::deploy::DeployOptions options(const fs::path& model, const fs::path& ws, int from_phase, int last_phase) {
  llmport::deploy::DeployOptions o;
  o.model = model.string();
  o.model_dir = model;
  o.workspace = ws;
  o.name = "stories260k";
  if (from_phase > 0) o.from_phase = from_phase;
  else o.reference = "golden:" + shared_path("models/stories260K/golden/public.json").string();
  o.reference_given = from_phase == 0;
  o.last_phase = last_phase;
  o.threads = 1;
  o.threads_given = true;
  o.quick = true;
  return o;
}

Resumed run(const llmport::deploy::DeployOptions& o, const fs::path& manifest) {
  std::istringstream in;
  std::ostringstream out;
  Resumed r;
  r.exit_code = llmport::deploy::run_deploy(o, in, out);
  r.out = out.str();
  r.manifest = json::parse(read_file(manifest));
  return r;
}

TEST(FinalizeGates, EachGateOfPhaseSixFailsWhenWhatItChecksIsMissing) {
  TempDir t;
  const fs::path model = shared_path("models/stories260K"), ws = t.path() / "ws";
  const fs::path dir = ws / "stories260k", manifest = dir / "deployment.json";
  // In-process, the pipeline's own binary would be this test executable: phase 6's `make
  // verify` (and the fake below) run the llmport named here.
  const llmport::test::ScopedEnv real("LLMPORT_EXE", std::string(llmport_test_bin()));
  const Resumed deployed = run(options(model, ws, 0, 6), manifest);
  ASSERT_EQ(deployed.exit_code, 0) << deployed.out;
  const std::string good = read_file(manifest);

  // Phases 4-5 recorded no prefill (or decode) figure: the README's Measured table has no
  // row for it (the static Profile section naming "prefill tokens/s" does not count).
  json m;
  Resumed r;
  for (const char* key : {"prefill tokens/s", "decode tokens/s"}) {
    SCOPED_TRACE(key);
    m = json::parse(good);
    m["measured"].erase(key);
    write_file(manifest, m.dump(2));
    r = run(options(model, ws, 6, 6), manifest);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_EQ(r.manifest["phases"][6]["status"], "FAIL");
    EXPECT_EQ(r.manifest["phases"][6]["reason"].get<std::string>().rfind(
                  std::string("README lacks the measured '") + key + "'", 0),
              0u)
        << r.manifest["phases"][6]["reason"];
  }

  // The tuned kernel configs phases 4-5 chose are gone from the manifest.
  m = json::parse(good);
  m["kernel_configs"].erase("tuned");
  write_file(manifest, m.dump(2));
  r = run(options(model, ws, 6, 6), manifest);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.manifest["phases"][6]["reason"], "manifest incomplete: tuned kernel configs");

  // The user's own `make verify` fails (an llmport that exits 1: the Makefile runs the
  // binary the deploy names, LLMPORT_EXE here).
  write_file(manifest, good);
  const fs::path fake = t.path() / "fake-llmport";
  write_file(fake, "#!/bin/sh\necho 'verify: FAIL (a planted failure)'\nexit 1\n");
  fs::permissions(fake, fs::perms::owner_all);
  {
    const llmport::test::ScopedEnv exe("LLMPORT_EXE", fake.string());
    r = run(options(model, ws, 6, 6), manifest);
  }
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.manifest["phases"][6]["reason"],
            "`make verify` in the workspace exited 2 (see phases/phase6/make_verify.log)");
  EXPECT_NE(read_file(dir / "phases" / "phase6" / "make_verify.log").find("a planted failure"), std::string::npos);

  // Put back, the phase passes again: the three failures were the gates', not the resume's.
  write_file(manifest, good);
  r = run(options(model, ws, 6, 6), manifest);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.manifest["phases"][6]["status"], "PASS") << r.manifest["phases"][6]["reason"];
}

}  // namespace
