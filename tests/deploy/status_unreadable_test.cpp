// `status` and `regress` with one corrupt deployment.json: that row is flagged and the others
// are still listed / re-verified; `status` without a default workspace says so and exits 0.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "deploy/manifest.hpp"
#include "deploy/workspace.hpp"
#include "support/test_support.hpp"

namespace llmport::deploy {
namespace {
namespace fs = std::filesystem;
using llmport::test::read_file;
using llmport::test::run_llmport;
using llmport::test::TempDir;
using llmport::test::write_file;

// A workspace with "good" (a valid, not yet deployed manifest) and "bad" (truncated JSON).
void make_workspace(const fs::path& w) {
  fs::create_directories(w / "good");
  fs::create_directories(w / "bad");
  Manifest m;
  m.name = "good";
  m.target = "cpu";
  m.dtype = "bf16";
  m.save(Workspace(w / "good").manifest());
  write_file(Workspace(w / "bad").manifest(), "{\"name\": \"bad\", \"target\": ");
}

TEST(StatusUnreadable, FlagsTheCorruptRowAndListsTheOthers) {
  TempDir t;
  make_workspace(t.path());
  const auto r = run_llmport({"status", "--workspace", t.path().string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // listed, but a row could not be read
  EXPECT_NE(r.out.find("bad"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unreadable: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("good"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu"), std::string::npos) << r.out;

  const auto j = run_llmport({"status", "--workspace", t.path().string(), "--json"});
  ASSERT_EQ(j.exit_code, 2) << j.err;
  const auto a = nlohmann::json::parse(j.out);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].at("name"), "bad");
  EXPECT_EQ(a[0].at("state").get<std::string>().rfind("unreadable: ", 0), 0u) << a[0];
  EXPECT_EQ(a[1].at("name"), "good");
}

// A deployment whose next phase never ran is "in progress" only while a deploy holds its
// lock; a deploy stopped by a signal (or a "no" under --interactive) left it "stopped before".
TEST(StatusUnreadable, InProgressOnlyWhileADeployHoldsTheLock) {
  TempDir t;
  make_workspace(t.path());
  fs::remove_all(t.path() / "bad");
  const auto idle = run_llmport({"status", "--workspace", t.path().string()});
  EXPECT_EQ(idle.exit_code, 0) << idle.err;
  EXPECT_NE(idle.out.find("stopped before phase 0 (not running"), std::string::npos) << idle.out;
  EXPECT_EQ(idle.out.find("in progress"), std::string::npos) << idle.out;
  const auto lock = FileLock::try_lock(deployment_lock_file(t.path(), "good"));
  ASSERT_TRUE(lock);
  const auto busy = run_llmport({"status", "--workspace", t.path().string()});
  EXPECT_NE(busy.out.find("in progress (next: phase 0)"), std::string::npos) << busy.out;
  EXPECT_NE(run_llmport({"status", "good", "--workspace", t.path().string()}).out.find("in progress"),
            std::string::npos);
}

// Values deploy cannot have written are refused naming the field, wherever deployment.json
// is read (status, serve DIR, deploy --resume), not taken as flags the user never gave
// ("--reference 'zzz'") or served (target "tpu", a dtype given twice: the second ran).
TEST(StatusUnreadable, ValuesDeployCannotHaveWrittenAreRefusedByField) {
  TempDir t;
  make_workspace(t.path());
  const fs::path file = Workspace(t.path() / "good").manifest();
  const std::string good = read_file(file);
  struct Case {
    std::string from, to, says;
  };
  for (const Case& c : std::vector<Case>{{"\"dtype\": \"bf16\"", "\"dtype\": \"int3\"", "dtype: unknown dtype 'int3'"},
                                         {"\"target\": \"cpu\"", "\"target\": \"tpu\"", "target: 'tpu'"},
                                         {"\"kind\": \"oracle\"", "\"kind\": \"zzz\"", "reference.kind: 'zzz'"},
                                         {"\"kl_bound\": 0.0", "\"kl_bound\": -1.0", "verify.kl_bound: -1"},
                                         {"\"min_top1\": 0.0", "\"min_top1\": 1.5", "verify.min_top1: 1.5"},
                                         {"\"dtype\": \"bf16\"", "\"dtype\": \"bf16\", \"dtype\": \"fp32\"",
                                          "\"dtype\" appears twice"}}) {
    SCOPED_TRACE(c.to);
    std::string bad = good;
    const auto at = bad.find(c.from);
    ASSERT_NE(at, std::string::npos) << good;
    bad.replace(at, c.from.size(), c.to);
    write_file(file, bad);
    const auto r = run_llmport({"status", "good", "--workspace", t.path().string()});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.err;
  }
}

TEST(RegressUnreadable, ContinuesWithTheOthersAndExits1) {
  TempDir t;
  make_workspace(t.path());
  const auto r = run_llmport({"regress", "--workspace", t.path().string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("UNREADABLE: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SKIP"), std::string::npos) << r.out;  // "good" was still looked at
  EXPECT_NE(r.out.find("regress: 1 of 2 deployments FAIL or unreadable"), std::string::npos) << r.out;
}

// A deployed workspace where one deployment's registry file is damaged: that one is an
// ERROR naming the file, the other is still re-verified (regress stopped at the damaged
// file with exit 2 and no summary).
TEST(RegressUnreadable, ADamagedRegistryFileIsThatDeploymentsError) {
  TempDir t;
  const std::string ws = (t.path() / "ws").string();
  const std::string golden = "golden:" + llmport::test::shared_path("models/stories260K/golden/public.json").string();
  for (const char* name : {"a", "b"}) {
    const auto d = run_llmport({"deploy", llmport::test::shared_path("models/stories260K").string(), "--workspace", ws,
                                "--name", name, "--reference", golden, "--threads", "1", "--quick"});
    ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  }
  const fs::path damaged = fs::path(ws) / "a" / "registry" / "gemm_fp32.json";
  ASSERT_TRUE(fs::exists(damaged));
  write_file(damaged, "{bad");
  const auto r = run_llmport({"regress", "--workspace", ws});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("ERROR: " + damaged.string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("regress: 1 of 2 deployments FAIL or unreadable"), std::string::npos) << r.out;
  // b was re-verified: its last regress is recorded as a PASS.
  const auto b = nlohmann::json::parse(read_file(fs::path(ws) / "b" / "deployment.json"));
  EXPECT_NE(b.dump().find(" PASS\""), std::string::npos) << b.dump();
}

// `llmport COMMAND` run in `dir` (so the default ./deployments is dir's), stdout and stderr
// together into dir/out.txt: the exit code (-1 when it did not exit) and that output.
std::pair<int, std::string> run_in(const fs::path& dir, const std::string& command) {
  const fs::path out = dir / "out.txt";
  const std::string line = "cd '" + dir.string() + "' && '" + std::string(LLMPORT_BIN) + "' " + command + " > '" +
                           out.string() + "' 2>&1";
  const int rc = std::system(line.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, read_file(out)};
}

TEST(StatusMissingDefaultWorkspace, SaysNoDeploymentsAndExits0) {
  TempDir t;
  const fs::path out = t.path() / "out.txt";
  const auto [rc, text] = run_in(t.path(), "status");
  EXPECT_EQ(rc, 0) << text;
  EXPECT_EQ(text, "no deployments in deployments\n");
  // A --workspace the user named that does not exist stays an error.
  const auto r = run_llmport({"status", "--workspace", (t.path() / "nope").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  // A file where the workspace should be is named as such (it exists).
  const auto f = run_llmport({"status", "--workspace", out.string()});
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_EQ(f.err, "error: workspace " + out.string() + " is not a directory\n");
}

// regress agrees with status: no default workspace is nothing to re-verify (exit 0); a
// --workspace the user named that does not exist is bad input (exit 2).
TEST(RegressMissingDefaultWorkspace, SaysNoDeploymentsAndExits0) {
  TempDir t;
  const auto [rc, text] = run_in(t.path(), "regress");
  EXPECT_EQ(rc, 0) << text;
  EXPECT_EQ(text, "no deployments in deployments\n");
  const auto r = run_llmport({"regress", "--workspace", (t.path() / "nope").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  // A default ./deployments that is there but broken (a dangling link, a file) is not "no
  // deployments": both commands name it.
  for (const std::string kind : {"dangling link", "file"}) {
    SCOPED_TRACE(kind);
    fs::remove(t.path() / "deployments");
    if (kind == "file") write_file(t.path() / "deployments", "x");
    else fs::create_symlink(t.path() / "gone", t.path() / "deployments");
    for (const char* cmd : {"regress", "status"}) {
      const auto [code, said] = run_in(t.path(), cmd);
      EXPECT_EQ(code, 2) << cmd << ": " << said;
      EXPECT_NE(said.find("workspace deployments"), std::string::npos) << cmd << ": " << said;
    }
  }
}

}  // namespace
}  // namespace llmport::deploy
