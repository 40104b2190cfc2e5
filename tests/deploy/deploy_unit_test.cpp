// Unit tests of the deploy module's own logic: verdict names, timing comparison rule,
// default names, manifest round trip, evaluation report format, file lock.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "deploy/evaluation_report.hpp"
#include "deploy/manifest.hpp"
#include "deploy/timing.hpp"
#include "deploy/workspace.hpp"
#include "llmport/deploy.hpp"
#include "llmport/error.hpp"
#include "support/test_support.hpp"

namespace llmport::deploy {
namespace {
namespace fs = std::filesystem;
using llmport::test::TempDir;

TEST(DeployStatus, NamesRoundTrip) {
  for (auto s : {PhaseStatus::NotRun, PhaseStatus::Pass, PhaseStatus::PassWithWarnings, PhaseStatus::Fail,
                 PhaseStatus::Blocked})
    EXPECT_EQ(parse_status(status_name(s)), s);
  EXPECT_EQ(status_name(PhaseStatus::PassWithWarnings), "PASS-with-warnings");
  EXPECT_TRUE(is_pass(PhaseStatus::PassWithWarnings));
  EXPECT_FALSE(is_pass(PhaseStatus::Blocked));
  EXPECT_THROW(parse_status("pass"), ConfigError);
  EXPECT_EQ(phase_name(7), "Independent evaluation");
  EXPECT_THROW(phase_name(8), UsageError);
}

TEST(DeployName, DefaultsToLowerCasedDirOrId) {
  TempDir t;
  fs::create_directories(t.path() / "Stories260K");
  EXPECT_EQ(default_deployment_name((t.path() / "Stories260K").string(), t.path() / "Stories260K"), "stories260k");
  EXPECT_EQ(default_deployment_name((t.path() / "Stories260K/").string(), t.path() / "Stories260K/"), "stories260k");
  // An HF id (not a local path): org/name -> org_name, revision dropped.
  EXPECT_EQ(default_deployment_name("Qwen/Qwen3-0.6B@main", t.path() / "cache-dir"), "qwen_qwen3-0.6b");
}

TimingStats stats(std::vector<double> v) { return TimingStats::of(std::move(v)); }

TEST(DeployTiming, MedianOfSamples) {
  auto s = stats({5, 1, 3, 2, 4});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(stats({1, 2, 3, 4}).median, 2.5);
}

TEST(DeployTiming, RatioIntervalOfAConstantRatioIsThatRatio) {
  // Every interleaved pair runs at exactly half the time: every bootstrap resample's ratio
  // of medians is 0.5, so the interval is the point 0.5.
  std::vector<double> base = {10, 10.5, 11, 10.2, 10.8, 9.7, 10.1};
  std::vector<double> tuned;
  for (double b : base) tuned.push_back(b / 2);
  auto r = ratio_of_medians_interval(base, tuned);
  EXPECT_DOUBLE_EQ(r.ratio, 0.5);
  EXPECT_DOUBLE_EQ(r.low, 0.5);
  EXPECT_DOUBLE_EQ(r.high, 0.5);
  EXPECT_EQ(r.resamples, 2000);
  EXPECT_NE(r.method.find("paired percentile bootstrap"), std::string::npos);
  EXPECT_THROW(ratio_of_medians_interval({1, 2}, {1}), UsageError);
  EXPECT_THROW(ratio_of_medians_interval({}, {}), UsageError);
  // Deterministic: the same samples give the same interval.
  std::vector<double> noisy = {9, 12, 10, 11, 9.5, 10.5, 13};
  auto a = ratio_of_medians_interval(base, noisy), b = ratio_of_medians_interval(base, noisy);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  EXPECT_LE(a.low, a.ratio);
  EXPECT_GE(a.high, a.ratio);
}

TEST(DeployTiming, TunedConfigsAreAdoptedOnlyWhenMeasurablyFaster) {
  // Clearly faster: the whole interval below 1 -> adopted.
  auto c = compare_timings(stats({10, 10.5, 11, 10.2, 10.8}), stats({5, 5.5, 6, 5.2, 5.8}), false, "prefill");
  EXPECT_TRUE(c.adopted);
  EXPECT_LT(c.interval.high, 1.0);
  EXPECT_NE(c.reason.find("adopted"), std::string::npos);
  // Same configs as before: nothing to adopt, whatever the numbers (not a warning).
  auto same = compare_timings(stats({10, 11, 12}), stats({5, 5, 5}), true, "prefill");
  EXPECT_FALSE(same.adopted);
  EXPECT_TRUE(same.same_configs);
  // Inside the noise, either sign: the interval straddles 1 -> the previous configs stay.
  for (auto tuned : {std::vector<double>{9.5, 10.2, 10.9, 9.1, 10.4}, std::vector<double>{9.5, 9.8, 10.9, 10.6, 9.2}}) {
    auto k = compare_timings(stats({9, 10, 11, 10.3, 9.6}), stats(tuned), false, "decode");
    EXPECT_FALSE(k.adopted);
    EXPECT_LE(k.interval.low, 1.0);
    EXPECT_GE(k.interval.high, 1.0);
    EXPECT_NE(k.reason.find("previous configs kept"), std::string::npos) << k.reason;
  }
  // A tuned decode 25% slower is never adopted: the deployment cannot get slower.
  auto slow = compare_timings(stats({10, 10.5, 11, 10.1, 10.7}), stats({12.5, 13.1, 13.8, 12.6, 13.4}), false, "decode");
  EXPECT_FALSE(slow.adopted);
  EXPECT_GT(slow.interval.low, 1.0);
  EXPECT_NEAR(slow.interval.ratio, 13.1 / 10.5, 1e-12);
}

TEST(DeployReference, ParsesTheFourKinds) {
  EXPECT_EQ(ReferenceSpec::parse("oracle").kind, "oracle");
  EXPECT_FALSE(ReferenceSpec::parse("oracle").independent());
  EXPECT_TRUE(ReferenceSpec::parse("hf").independent());
  EXPECT_EQ(ReferenceSpec::parse("numpy").to_arg(), "numpy");
  EXPECT_TRUE(ReferenceSpec::parse("numpy").independent());
  TempDir t;
  llmport::test::write_file(t.path() / "g.json", "{}");
  auto g = ReferenceSpec::parse("golden:" + (t.path() / "g.json").string());
  EXPECT_EQ(g.kind, "golden");
  EXPECT_TRUE(g.file.is_absolute());
  EXPECT_EQ(g.to_arg(), "golden:" + g.file.string());
  EXPECT_THROW(ReferenceSpec::parse("golden:" + (t.path() / "missing.json").string()), UsageError);
  EXPECT_THROW(ReferenceSpec::parse("torch"), UsageError);
}

TEST(DeployManifest, RoundTripsThroughJson) {
  TempDir t;
  Manifest m;
  m.name = "tiny";
  m.model_dir = "/models/tiny";
  m.file_hashes = {{"config.json", "aa"}, {"model.safetensors", "bb"}};
  m.content_hash = combine_hashes(m.file_hashes);
  m.target = "cpu";
  m.dtype = "bf16";
  m.reference.kind = "oracle";
  m.phases[3].status = PhaseStatus::Fail;
  m.phases[3].reason = "verify FAIL";
  m.phases[3].numbers = {{"mean_kl", 0.5}};
  m.phases[0].status = PhaseStatus::Pass;
  m.phases[0].timing.wall_min = 2;
  m.phases[0].timing.compile_min = 0.5;
  m.phases[0].timing.runtime_s = 30;
  m.save(t.path() / "deployment.json");
  Manifest r = Manifest::load(t.path() / "deployment.json");
  EXPECT_EQ(r.name, "tiny");
  EXPECT_EQ(r.file_hashes, m.file_hashes);
  EXPECT_EQ(r.content_hash, m.content_hash);
  EXPECT_EQ(r.phases[3].status, PhaseStatus::Fail);
  EXPECT_EQ(r.phases[3].numbers["mean_kl"], 0.5);
  EXPECT_EQ(r.first_unpassed(), 1);
  // residual = wall - compile - runtime = 2 - 0.5 - 0.5 minutes
  EXPECT_DOUBLE_EQ(r.phases[0].timing.residual_min(), 1.0);
  // A different hash list gives a different content hash.
  auto h2 = m.file_hashes;
  h2["model.safetensors"] = "bc";
  EXPECT_NE(combine_hashes(h2), m.content_hash);
  llmport::test::write_file(t.path() / "bad.json", "{\"format\": \"other\"}");
  EXPECT_THROW(Manifest::load(t.path() / "bad.json"), ConfigError);
  // A record of the wrong shape is named in llmport's words, not nlohmann's
  // "[json.exception.type_error.306] cannot use value() with array".
  const fs::path f = t.path() / "shape.json";
  auto message = [&](const std::string& text) {
    llmport::test::write_file(f, text);
    try {
      Manifest::load(f);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("[]"), f.string() + ": expected a JSON object (a deployment record), got array");
  EXPECT_EQ(message("{\"format\": \"llmport-deployment/1\", \"phases\": \"x\"}"),
            f.string() + ": not a valid deployment record: name: missing");
  // A field of the wrong type or range is named by its path, whatever the field.
  const nlohmann::json good = m.to_json();
  struct Edit {
    std::function<void(nlohmann::json&)> edit;
    std::string says;
  };
  for (const Edit& e : {Edit{[](nlohmann::json& j) { j["dtype"] = 5; }, "dtype: expected a string, got 5"},
                        Edit{[](nlohmann::json& j) { j["threads"] = -4; },
                             "threads: expected an integer in [0, 2147483647], got -4"},
                        Edit{[](nlohmann::json& j) { j["model"]["path"] = nlohmann::json::array(); },
                             "model.path: expected a string, got []"},
                        Edit{[](nlohmann::json& j) { j["model"]["file_stats"] = {{"config.json", {{"size", "big"}}}}; },
                             "model.file_stats.config.json.size: expected an integer"},
                        Edit{[](nlohmann::json& j) { j["phases"][3]["status"] = "GREAT"; },
                             "phases[3].status: unknown phase status 'GREAT'"},
                        Edit{[](nlohmann::json& j) { j["phases"][2]["warnings"] = "w"; },
                             "phases[2].warnings: expected a list of strings, got \"w\""},
                        Edit{[](nlohmann::json& j) { j["reference"] = 1; }, "reference: expected an object, got 1"}}) {
    nlohmann::json j = good;
    e.edit(j);
    EXPECT_EQ(message(j.dump()).rfind(f.string() + ": not a valid deployment record: " + e.says, 0), 0u)
        << message(j.dump());
  }
}

TEST(DeployEvaluationReport, VerdictIsTheLineAfterTheTitle) {
  TempDir t;
  EvaluationReport r;
  r.name = "x";
  // A message's "|e - r|" stays itself in the table ("\|") and in the warning read back.
  r.audit = {{"a", "ok", "mean |e - r| 0.2\nsecond line"}, {"b", "warning", "oracle reference |x|"}};
  r.verdict = EvaluationReport::verdict_of(r.audit);
  EXPECT_EQ(r.verdict, "PASS-with-warnings");
  std::string md = r.to_markdown();
  EXPECT_EQ(md.substr(0, md.find('\n', md.find('\n') + 1)), "# Evaluation report: x\nVerdict: PASS-with-warnings");
  for (const char* s : {"## Gate audit", "## Re-run", "## Reproduce"}) EXPECT_NE(md.find(s), std::string::npos) << s;
  EXPECT_NE(md.find("| a | ok | mean \\|e - r\\| 0.2 second line |\n"), std::string::npos) << md;
  llmport::test::write_file(t.path() / "r.md", md);
  EXPECT_EQ(read_verdict(t.path() / "r.md"), "PASS-with-warnings");
  auto w = read_report_warnings(t.path() / "r.md");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "b: oracle reference |x|");
  EXPECT_EQ(EvaluationReport::verdict_of({{"a", "ok", ""}, {"b", "FAIL", ""}, {"c", "warning", ""}}), "FAIL");
  EXPECT_EQ(EvaluationReport::verdict_of({{"a", "ok", ""}}), "PASS");
}

TEST(DeployLock, ExcludesASecondHolder) {
  TempDir t;
  fs::path f = t.path() / "dev.lock";
  EXPECT_TRUE(FileLock::try_probe(f));
  {
    FileLock l(f);
    EXPECT_FALSE(FileLock::try_probe(f));
  }
  EXPECT_TRUE(FileLock::try_probe(f));
}

// The exit code of `child` run in a forked process as uid/gid 65534 when this one is root
// (as this user otherwise); 3 when root could not drop, -1 when the child did not exit.
int exit_code_as_nobody(const std::function<int()>& child) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (::geteuid() == 0 && (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0))
      ::_exit(3);
    ::_exit(child());
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// A lock file this user may not write (another user's 0644 device lock in /tmp) still
// locks: flock needs only a descriptor. Root may write anything, so as root the child
// drops to uid 65534 first; otherwise the file is made read-only for its owner.
TEST(Workspace, LockFileOfAnotherUserStillLocks) {
  TempDir t;
  fs::permissions(t.path(), fs::perms::all);  // the unprivileged child must reach it
  const fs::path f = t.path() / "dev.lock";
  { std::ofstream(f) << ""; }
  fs::permissions(f, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const int code = exit_code_as_nobody([&] {
    if (::access(f.c_str(), R_OK) != 0) return 5;  // TMPDIR not reachable by uid 65534
    if (::access(f.c_str(), W_OK) == 0) return 4;  // the case under test did not arise
    try {
      { FileLock l(f); }
      return FileLock::try_lock(f) ? 0 : 2;
    } catch (const std::exception&) {
      return 1;
    }
  });
  if (code == 5) GTEST_SKIP() << t.path() << " is not reachable by uid 65534 (TMPDIR)";
  EXPECT_EQ(code, 0) << "1: the read-only lock file was refused; 2: try_lock found it held; 3: could not drop root; 4: still writable";
  FileLock mine(f);  // and this process can take it after the child is gone
}

// In a directory this user cannot write, with no lock file yet: the error is the create's
// "Permission denied" (the read-only fallback's "No such file or directory" hid it).
TEST(Workspace, ALockFileThatCannotBeCreatedSaysPermissionDenied) {
  TempDir t;
  fs::permissions(t.path(), fs::perms::all);
  const fs::path ro = t.path() / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read | fs::perms::group_exec |
                          fs::perms::others_read | fs::perms::others_exec);
  const int code = exit_code_as_nobody([&] {
    if (::access(ro.c_str(), X_OK) != 0) return 5;  // TMPDIR not reachable by uid 65534
    try {
      FileLock l(ro / "x.lock");
      return 4;
    } catch (const std::exception& e) {
      return std::string(e.what()).find(": cannot open lock file: Permission denied") != std::string::npos ? 0 : 1;
    }
  });
  if (code == 5) GTEST_SKIP() << t.path() << " is not reachable by uid 65534 (TMPDIR)";
  EXPECT_EQ(code, 0) << "1: another reason given; 3: could not drop root; 4: the lock was taken";
}

// A workspace under a directory this user may not search exists but cannot be looked at:
// the error says so instead of "does not exist". As root the child drops to uid 65534.
TEST(Workspace, UnsearchableWorkspaceIsNotCalledMissing) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a directory uid 65534 cannot search";
  TempDir t;
  fs::permissions(t.path(), fs::perms::all);
  const fs::path ws = t.path() / "private" / "ws";
  fs::create_directories(ws);
  fs::permissions(t.path() / "private", fs::perms::owner_all);
  const int code = exit_code_as_nobody([&] {
    try {
      require_workspace_dir(ws);
      return 4;
    } catch (const UsageError& e) {
      return std::string(e.what()).find("cannot be read: Permission denied") != std::string::npos ? 0 : 1;
    }
  });
  if (code == 3) GTEST_SKIP() << "could not drop to uid 65534";
  EXPECT_EQ(code, 0) << "1: another message (\"does not exist\"?); 4: no error";
  EXPECT_NO_THROW(require_workspace_dir(ws));  // root can
  EXPECT_THROW(require_workspace_dir(t.path() / "absent"), UsageError);
}

}  // namespace
}  // namespace llmport::deploy
