// A deployment whose model weights change afterwards (one tensor scaled by 1.02, same file
// size) is no longer the deployed model: `regress` and the deployment's `make verify` (verify
// --deployment) hash the files against deployment.json and FAIL naming the file, and `status`
// stops calling it deployed; `make run` still runs but warns. Before, all four said PASS /
// deployed / nothing and only `evaluate`'s weight-hash row noticed.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using llmport::test::read_file;
using llmport::test::run_llmport;
using llmport::test::run_make;
using llmport::test::RunResult;
using llmport::test::shared_path;
using llmport::test::TempDir;
using llmport::test::write_file;
using nlohmann::json;

// Multiplies every value of the F32 tensor `name` of a safetensors file by `factor`, in
// place: same size, same header, other weights.
void scale_tensor(const fs::path& file, const std::string& name, float factor) {
  const std::size_t size_before = fs::file_size(file);
  llmport::test::edit_f32_tensor(file, name, [&](float& v, std::size_t) { v *= factor; });
  ASSERT_EQ(fs::file_size(file), size_before);
}

// Sets a file's mtime (nanoseconds since the epoch), as `touch -d` would.
void set_mtime_ns(const fs::path& file, int64_t ns) {
  const timespec ts[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)}};
  ASSERT_EQ(utimensat(AT_FDCWD, file.c_str(), ts, 0), 0) << std::strerror(errno);
}

TEST(DeployWeightsChanged, RegressMakeVerifyAndStatusCatchAChangedTensor) {
  TempDir t;
  const fs::path model = llmport::test::copy_stories(t.path() / "m3");
  const fs::path golden = shared_path("models/stories260K/golden/public.json");
  const std::string ws = (t.path() / "ws").string();
  auto d = run_llmport({"deploy", model.string(), "--dtype", "q8_0", "--workspace", ws, "--reference",
                        "golden:" + golden.string(), "--threads", "1", "--quick"});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  const fs::path dir = fs::path(ws) / "m3";
  const fs::path weights = model / "model.safetensors";
  const json manifest = json::parse(read_file(dir / "deployment.json"));
  ASSERT_TRUE(manifest["model"]["file_stats"].contains("model.safetensors")) << manifest["model"].dump();
  auto st = run_llmport({"status", "--workspace", ws});
  ASSERT_EQ(st.exit_code, 0);
  ASSERT_NE(st.out.find("  deployed\n"), std::string::npos) << st.out;

  const std::string original = read_file(weights);
  auto mr = run_make({"-C", dir.string(), "run", "PROMPT=Once", "N_TOKENS=2"});
  ASSERT_EQ(mr.exit_code, 0) << mr.out << mr.err;
  EXPECT_EQ(mr.err.find("warning"), std::string::npos) << mr.err;
  {  // The user's exported MODEL and THREADS are not the deployment's: only make's command
     // line overrides what the deployment is.
    const llmport::test::ScopedEnv model_env("MODEL", "/nonexistent/model");
    const llmport::test::ScopedEnv threads_env("THREADS", "3");
    const auto er = run_make({"-C", dir.string(), "run", "PROMPT=Once", "N_TOKENS=2"});
    EXPECT_EQ(er.exit_code, 0) << er.out << er.err;
    EXPECT_EQ(er.out, mr.out);
    EXPECT_EQ(er.err.find("warning"), std::string::npos) << er.err;
  }
  {  // A deployment flagged for human review runs, and says so.
    const std::string passed = read_file(dir / "deployment.json");
    json flagged = json::parse(passed);
    flagged["needs_human_review"] = true;
    llmport::test::write_file(dir / "deployment.json", flagged.dump(2));
    const auto fr = run_make({"-C", dir.string(), "run", "PROMPT=Once", "N_TOKENS=2"});
    EXPECT_EQ(fr.exit_code, 0) << fr.out << fr.err;
    EXPECT_NE(fr.err.find("warning: deployment " + dir.string() + " has not passed: flagged for human review "
                          "(evaluation_report.md)"),
              std::string::npos)
        << fr.err;
    llmport::test::write_file(dir / "deployment.json", passed);
  }
  scale_tensor(weights, "model.layers.2.mlp.down_proj.weight", 1.02f);

  // make run (run --deployment) still runs, and says the verdict does not cover it.
  mr = run_make({"-C", dir.string(), "run", "PROMPT=Once", "N_TOKENS=2"});
  EXPECT_EQ(mr.exit_code, 0) << mr.out << mr.err;
  EXPECT_NE(mr.err.find("warning: deployment " + dir.string() + ": weights changed? model.safetensors: size or mtime "
                        "differs from deployment"),
            std::string::npos)
      << mr.err;
  EXPECT_NE(mr.err.find("the deployment's verdict may not cover this run"), std::string::npos) << mr.err;
  // serve DEPLOYMENT_DIR says so too, before it listens (here it cannot: the address is bad).
  auto sv = run_llmport({"serve", dir.string(), "--host", "256.0.0.1", "--port", "1"});
  EXPECT_EQ(sv.exit_code, 2) << sv.out << sv.err;
  EXPECT_NE(sv.err.find("warning: deployment " + dir.string() + ": weights changed? model.safetensors"),
            std::string::npos)
      << sv.err;
  EXPECT_NE(sv.err.find("the deployment's verdict may not cover what is served"), std::string::npos) << sv.err;
  // Served in another dtype than the one deployed: said too.
  auto other_dtype = run_llmport({"serve", dir.string(), "--dtype", "bf16", "--host", "256.0.0.1", "--port", "1"});
  EXPECT_NE(other_dtype.err.find("warning: deployment " + dir.string() + " verified q8_0; serving bf16 "
                                 "is not covered by its verdict"),
            std::string::npos)
      << other_dtype.err;
  EXPECT_EQ(sv.err.find(" verified "), std::string::npos) << sv.err;
  // The deployed precision spelled another way is the same one: no warning.
  auto same = run_llmport({"serve", dir.string(), "--dtype", "Q8_0", "--host", "256.0.0.1", "--port", "1"});
  EXPECT_EQ(same.err.find(" verified "), std::string::npos) << same.err;
  // MODEL given as its config.json, the deployment as its deployment.json: the same ones.
  auto by_files = run_llmport({"run", (model / "config.json").string(), "--deployment",
                               (dir / "deployment.json").string(), "--prompt", "Once", "-n", "2"});
  EXPECT_EQ(by_files.exit_code, 0) << by_files.err;
  EXPECT_EQ(by_files.err.find("is not the deployed model"), std::string::npos) << by_files.err;
  EXPECT_NE(by_files.err.find("weights changed? model.safetensors"), std::string::npos) << by_files.err;
  auto other = run_llmport({"run", shared_path("models/stories260K").string(), "--deployment", dir.string(), "--prompt",
                            "Once", "-n", "2"});
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.err.find(shared_path("models/stories260K").string() + " is not the deployed model " + model.string()),
            std::string::npos)
      << other.err;
  auto nowhere = run_llmport({"run", model.string(), "--deployment", t.path().string(), "--prompt", "Once", "-n", "2"});
  EXPECT_EQ(nowhere.exit_code, 2) << nowhere.err;
  EXPECT_EQ(nowhere.err.rfind("error: --deployment ", 0), 0u) << nowhere.err;

  // regress: FAIL naming the file, without re-running a gate on other weights.
  auto rg = run_llmport({"regress", "--workspace", ws});
  EXPECT_EQ(rg.exit_code, 1) << rg.out << rg.err;
  EXPECT_NE(rg.out.find("FAIL: weights changed since deployment: model.safetensors"), std::string::npos) << rg.out;
  EXPECT_NE(rg.out.find("regress: 1 of 1 deployments FAIL"), std::string::npos) << rg.out;
  EXPECT_NE(json::parse(read_file(dir / "deployment.json"))["measured"]["last regress"].get<std::string>().find("FAIL"),
            std::string::npos);

  // make verify (the deployment's Makefile: verify --deployment) and verify itself.
  auto mv = run_make({"-C", dir.string(), "verify"});
  EXPECT_NE(mv.exit_code, 0) << mv.out << mv.err;
  EXPECT_NE(mv.out.find("FAIL: weights changed since deployment: model.safetensors"), std::string::npos) << mv.out;
  EXPECT_EQ(mv.out.find("PASS"), std::string::npos) << mv.out;
  auto v = run_llmport({"verify", model.string(), "--dtype", "q8_0", "--reference", "golden:" + golden.string(),
                        "--deployment", dir.string(), "--report-dir", (t.path() / "r1").string()});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("FAIL: weights changed since deployment: model.safetensors"), std::string::npos) << v.out;
  // Not a deployment: bad input.
  auto nd = run_llmport({"verify", model.string(), "--deployment", t.path().string()});
  EXPECT_EQ(nd.exit_code, 2) << nd.out << nd.err;
  EXPECT_EQ(nd.err.rfind("error: --deployment ", 0), 0u) << nd.err;

  // status: no longer "deployed", in every view.
  st = run_llmport({"status", "--workspace", ws});
  EXPECT_EQ(st.exit_code, 0);
  EXPECT_EQ(st.out.find("deployed"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("weights changed? model.safetensors"), std::string::npos) << st.out;
  auto one = run_llmport({"status", "m3", "--workspace", ws});
  EXPECT_EQ(one.out.rfind("deployment m3: weights changed? model.safetensors", 0), 0u) << one.out;
  auto js = run_llmport({"status", "--workspace", ws, "--json"});
  EXPECT_NE(json::parse(js.out)[0]["state"].get<std::string>().find("weights changed?"), std::string::npos) << js.out;

  // Size and mtime put back as recorded: status's cheap check is fooled (documented), the
  // hash of regress and make verify is not.
  set_mtime_ns(weights, manifest["model"]["file_stats"]["model.safetensors"]["mtime_ns"].get<int64_t>());
  rg = run_llmport({"regress", "--workspace", ws});
  EXPECT_EQ(rg.exit_code, 1) << rg.out;
  EXPECT_NE(rg.out.find("FAIL: weights changed since deployment: model.safetensors"), std::string::npos) << rg.out;
  EXPECT_NE(run_make({"-C", dir.string(), "verify"}).exit_code, 0);

  // The original bytes back (a new mtime): status says "changed?" until a regress hashes
  // them, passes and records the new mtime; then deployed again, and make verify passes.
  write_file(weights, original);
  st = run_llmport({"status", "--workspace", ws});
  EXPECT_NE(st.out.find("weights changed? model.safetensors"), std::string::npos) << st.out;
  rg = run_llmport({"regress", "--workspace", ws});
  EXPECT_EQ(rg.exit_code, 0) << rg.out << rg.err;
  EXPECT_NE(rg.out.find("regress: 0 of 1 deployments FAIL"), std::string::npos) << rg.out;
  st = run_llmport({"status", "--workspace", ws});
  EXPECT_NE(st.out.find("  deployed\n"), std::string::npos) << st.out;
  mv = run_make({"-C", dir.string(), "verify"});
  EXPECT_EQ(mv.exit_code, 0) << mv.out << mv.err;

  // A manifest written before llmport recorded sizes and mtimes: status hashes instead.
  json old = json::parse(read_file(dir / "deployment.json"));
  old["model"].erase("file_stats");
  write_file(dir / "deployment.json", old.dump(2));
  st = run_llmport({"status", "--workspace", ws});
  EXPECT_NE(st.out.find("  deployed\n"), std::string::npos) << st.out;
  scale_tensor(weights, "model.layers.2.mlp.down_proj.weight", 1.02f);
  st = run_llmport({"status", "--workspace", ws});
  EXPECT_EQ(st.out.find("deployed"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("weights changed since deployment: model.safetensors"), std::string::npos) << st.out;

  // A deployment with a phase that did not pass: run and serve say so before they start
  // (serve started on a FAIL deployment without a word).
  json failed = json::parse(read_file(dir / "deployment.json"));
  failed["phases"][7]["status"] = "FAIL";
  failed["phases"][7]["reason"] = "the re-run failed";
  write_file(dir / "deployment.json", failed.dump(2));
  const std::string said =
      "warning: deployment " + dir.string() + " has not passed: phase 7 (Independent evaluation) is FAIL: the re-run failed";
  auto fr = run_llmport({"run", model.string(), "--deployment", dir.string(), "--prompt", "Once", "-n", "2"});
  EXPECT_EQ(fr.exit_code, 0) << fr.err;
  EXPECT_NE(fr.err.find(said), std::string::npos) << fr.err;
  auto fsv = run_llmport({"serve", dir.string(), "--host", "256.0.0.1", "--port", "1"});
  EXPECT_NE(fsv.err.find(said), std::string::npos) << fsv.err;
}

// The golden a deployment was judged against, changed afterwards (here one byte more), is
// another reference: regress and make verify FAIL naming it instead of re-judging the model
// against whatever the file holds now; the original bytes back pass again.
TEST(DeployWeightsChanged, RegressAndMakeVerifyCatchAChangedGolden) {
  TempDir t;
  const fs::path golden = t.path() / "golden.json";
  const std::string original = read_file(shared_path("models/stories260K/golden/public.json"));
  write_file(golden, original);
  const std::string ws = (t.path() / "ws").string();
  auto d = run_llmport({"deploy", shared_path("models/stories260K").string(), "--dtype", "q8_0", "--workspace", ws,
                        "--name", "g", "--reference", "golden:" + golden.string(), "--threads", "1", "--quick"});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  const fs::path dir = fs::path(ws) / "g";

  write_file(golden, original + "\n");
  const std::string says = "FAIL: golden " + golden.string() + " changed since deployment (sha256 differs";
  auto rg = run_llmport({"regress", "--workspace", ws});
  EXPECT_EQ(rg.exit_code, 1) << rg.out << rg.err;
  EXPECT_NE(rg.out.find(says), std::string::npos) << rg.out;
  auto mv = run_make({"-C", dir.string(), "verify"});
  EXPECT_NE(mv.exit_code, 0) << mv.out << mv.err;
  EXPECT_NE(mv.out.find(says), std::string::npos) << mv.out;
  EXPECT_EQ(mv.out.find("PASS"), std::string::npos) << mv.out;
  fs::remove(golden);
  rg = run_llmport({"regress", "--workspace", ws});
  EXPECT_EQ(rg.exit_code, 1) << rg.out;
  EXPECT_NE(rg.out.find("FAIL: golden " + golden.string() + " missing or unreadable since deployment"),
            std::string::npos) << rg.out;
  EXPECT_EQ(rg.out.find("sha256 differs"), std::string::npos) << "no hash was compared: " << rg.out;

  write_file(golden, original);
  rg = run_llmport({"regress", "--workspace", ws});
  EXPECT_EQ(rg.exit_code, 0) << rg.out << rg.err;
  EXPECT_EQ(run_make({"-C", dir.string(), "verify"}).exit_code, 0);
}

}  // namespace
