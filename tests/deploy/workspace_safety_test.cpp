// What a deployment workspace must never do with what a user wrote: run it (a --name, a
// model or workspace path in the generated Makefile) or lose it (an edited generated file
// when llmport's record of them is damaged, a user's file in kernel_cache/ or in phase 4's
// registry snapshot).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/deploy.hpp"
#include "llmport/error.hpp"
#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using llmport::test::read_file;
using llmport::test::copy_stories;
using llmport::test::deploy_quick;
using llmport::test::run_llmport;
using llmport::test::run_make;
using llmport::test::RunResult;
using llmport::test::shared_path;
using llmport::test::ScopedEnv;
using llmport::test::TempDir;
using llmport::test::write_file;


// Every file under `root` whose name starts with `prefix`.
std::vector<fs::path> files_named(const fs::path& root, const std::string& prefix) {
  std::vector<fs::path> v;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.path().filename().string().rfind(prefix, 0) == 0) v.push_back(e.path());
  return v;
}


// The one line of stderr starting with `prefix` ("" when none).
std::string line_with(const std::string& err, const std::string& needle) {
  const auto at = err.find(needle);
  if (at == std::string::npos) return "";
  const auto begin = err.rfind('\n', at);
  const auto end = err.find('\n', at);
  return err.substr(begin == std::string::npos ? 0 : begin + 1,
                    end == std::string::npos ? std::string::npos : end - (begin == std::string::npos ? 0 : begin + 1));
}

TEST(DeployName, DerivedDefaultsAreSanitizedIntoTheAllowedSet) {
  TempDir t;
  const auto name_of = [&](const std::string& dir) {
    fs::create_directories(t.path() / dir);
    return llmport::deploy::default_deployment_name((t.path() / dir).string(), t.path() / dir);
  };
  EXPECT_EQ(name_of("Stories 260K"), "stories_260k");
  EXPECT_EQ(name_of("a$(shell touch PWNED)b"), "a__shell_touch_pwned_b");
  EXPECT_EQ(name_of(".hidden-Model"), "hidden-model");
  EXPECT_EQ(name_of("$$$"), "model");
  EXPECT_EQ(name_of(std::string(150, 'x')), std::string(100, 'x'));
  EXPECT_EQ(llmport::deploy::default_deployment_name("Org/Na me`x`@main", t.path() / "cache"), "org_na_me_x_");
  for (const std::string& dir : std::vector<std::string>{"Stories 260K", "a$(shell touch PWNED)b", ".hidden-Model", "$$$"})
    EXPECT_NO_THROW(llmport::deploy::check_deployment_name(name_of(dir))) << dir;
}

TEST(DeployName, OnlyTheSafeSetIsAccepted) {
  using llmport::deploy::check_deployment_name;
  for (const std::string& ok : std::vector<std::string>{"a", "stories260k", "Qwen_Qwen3-0.6B", "9.x_y-z", std::string(100, 'n')})
    EXPECT_NO_THROW(check_deployment_name(ok)) << ok;
  for (const std::string& bad : std::vector<std::string>{"", ".", "..", ".hidden", "-x", "_x", "a b", "a/b", "a$b", "a\nb", "a'b", "a\"b",
                                "a;b", "a`b`", "a#b", "é", std::string(101, 'n')})
    EXPECT_THROW(check_deployment_name(bad), llmport::UsageError) << bad;
}

// `--name 'b$(touch SHPWN)c'` ran the command on `make run`, `--name 'a$(shell touch
// PWNED)b'` even on `make -n compile`, and a newline broke the Makefile: each is refused
// with exit 2 and a one-line error naming --name, and nothing is created.
TEST(DeployCli, UnsafeNamesAreRefusedBeforeAnythingIsWritten) {
  TempDir t;
  const std::string model = shared_path("models/stories260K").string();
  const fs::path ws = t.path() / "ws";
  for (const std::string& name : std::vector<std::string>{"b$(touch SHPWN)c", "a$(shell touch PWNED)b", "a\nb", "a b", "../x", ".hidden",
                                 "a`touch X`", std::string(101, 'n')}) {
    SCOPED_TRACE(name);
    const auto r = deploy_quick({model, "--workspace", ws.string(), "--name", name, "--last-phase", "0"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("error: --name '", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("letters, digits"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(ws));
  }
  EXPECT_TRUE(files_named(t.path(), "SHPWN").empty());
  EXPECT_TRUE(files_named(t.path(), "PWNED").empty());
  // An HF id is not resolved (downloaded) before the name is checked: HF_HUB_OFFLINE would
  // otherwise answer first with "not in the local cache".
  ScopedEnv offline("HF_HUB_OFFLINE", "1"), home("HF_HOME", t.path().string());
  const auto r = run_llmport({"deploy", "nobody/absent-model", "--workspace", ws.string(), "--name", "a b"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("error: --name 'a b'", 0), 0u) << r.err;
}

// --resume of a deployment that is not there (a mistyped --name) started a new one from
// phase 0; --resume and --from-phase together were accepted (two answers to where it
// resumes). Both are one-line usage errors before anything is written.
TEST(DeployCli, AResumeOfNoDeploymentOrWithFromPhaseIsRefused) {
  TempDir t;
  const std::string model = shared_path("models/stories260K").string();
  const fs::path ws = t.path() / "ws";
  fs::create_directories(ws / "stories260k");
  write_file(ws / "stories260k" / "deployment.json", "{}");
  auto r = deploy_quick({model, "--workspace", ws.string(), "--name", "storeis260k", "--resume"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "error: --resume: no deployment at " + (ws / "storeis260k").string() + " (deployments in " +
                       ws.string() + ": stories260k); start without --resume\n");
  EXPECT_FALSE(fs::exists(ws / "storeis260k"));
  r = deploy_quick({model, "--workspace", ws.string(), "--resume", "--from-phase", "3"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--from-phase and --resume cannot be given together"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// A model directory and a workspace whose paths hold '$', command substitutions, quotes, a
// backquote, a backslash, '#' and spaces deploy; the default name is sanitized; `make -n`
// of every target and a real `make run` run nothing but llmport (the model is found, so
// the path reached it byte for byte).
TEST(DeployPipeline, ShellAndMakeSyntaxInPathsRunsNothing) {
  TempDir t;
  const std::string evil = "St $(touch PWNED1) $(shell touch PWNED2) `touch PWNED3` $HOME 'q' \"d\" \\x #h";
  const fs::path model = t.path() / ("models " + evil) / evil;
  copy_stories(model);
  const fs::path ws = t.path() / ("ws $(touch PWNED4) " + evil);
  const auto r = deploy_quick({model.string(), "--workspace", ws.string(), "--last-phase", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path dir = ws / "st___touch_pwned1____shell_touch_pwned2___touch_pwned3___home__q___d___x__h";
  ASSERT_TRUE(fs::is_regular_file(dir / "Makefile")) << r.out;
  for (const char* target : {"run", "verify", "verify-full", "diagnosis", "profile", "bench", "compile", "clean"}) {
    const auto dry = run_make({"-C", dir.string(), "-n", target});
    EXPECT_EQ(dry.exit_code, 0) << target << "\n" << dry.out << dry.err;
  }
  const auto mr = run_make({"-C", dir.string(), "run", "N_TOKENS=2"});
  ASSERT_EQ(mr.exit_code, 0) << mr.out << mr.err;
  EXPECT_NE((mr.out + mr.err).find("Once upon a time"), std::string::npos) << mr.out << mr.err;
  // `make -n` prints the commands as the shell gets them: the model path appears escaped.
  for (const char* p : {"PWNED1", "PWNED2", "PWNED3", "PWNED4"}) EXPECT_TRUE(files_named(t.path(), p).empty()) << p;
}

// With the record of generated files missing, unreadable or mistyped, an edited README.md
// or phase_timing.md was overwritten without a word; now it is kept as <file>.user-<time>
// with a warning naming the record.
TEST(DeployPipeline, EditsSurviveAMissingOrDamagedRecordOfGeneratedFiles) {
  TempDir t;
  const std::string model = shared_path("models/stories260K").string();
  const fs::path ws = t.path() / "ws", dir = ws / "stories260k";
  ASSERT_EQ(deploy_quick({model, "--workspace", ws.string(), "--last-phase", "0"}).exit_code, 0);
  const fs::path record = dir / ".llmport-generated.json";
  ASSERT_TRUE(fs::is_regular_file(record));
  struct Case {
    std::string damage;    // what is done to the record
    std::string contents;  // "": removed
    std::string says;      // the warning's reason
  };
  const std::vector<Case> cases = {{"missing", "", "is missing"},
                                   {"garbage", "garbage{", "is unreadable"},
                                   {"wrong types", "{\"README.md\":5,\"docs/development_progress/phase_timing.md\":[]}",
                                    "has a malformed entry for it"}};
  int round = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.damage);
    ++round;
    if (c.contents.empty()) fs::remove(record);
    else write_file(record, c.contents);
    const std::string edit = "\nUSER EDIT " + std::to_string(round) + "\n";
    const fs::path readme = dir / "README.md", timing = dir / "docs/development_progress/phase_timing.md";
    write_file(readme, read_file(readme) + edit);
    write_file(timing, read_file(timing) + edit);
    const auto r = deploy_quick({model, "--workspace", ws.string(), "--from-phase", "0", "--last-phase", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const fs::path& f : {readme, timing}) {
      EXPECT_EQ(read_file(f).find(edit), std::string::npos) << f;  // regenerated
      int kept = 0;
      for (const auto& copy : files_named(f.parent_path(), f.filename().string() + ".user-"))
        kept += read_file(copy).find(edit) != std::string::npos;
      EXPECT_EQ(kept, 1) << f;
      // README.md, written first, is told the damage; the record is rewritten then, so a
      // file written later may be told the record has no entry for it.
      const std::string w = line_with(r.err, "warning: " + f.string() + " may hold your edits");
      EXPECT_TRUE(w.find(".llmport-generated.json) " + c.says) != std::string::npos ||
                  (f != readme && w.find(".llmport-generated.json) has no entry for it") != std::string::npos))
          << r.err;
      EXPECT_NE(w.find("kept as " + f.filename().string() + ".user-"), std::string::npos) << r.err;
    }
  }
}

// A user's file in kernel_cache/ (cleared by the evaluation) and in phase 4's registry
// snapshot (replaced by phase 4) was deleted without a word; now it is moved into
// <dir>.user-<time>/ with a warning, and llmport's own files there are still cleared.
TEST(DeployPipeline, UserFilesInLlmportsDirectoriesAreMovedAsideNotDeleted) {
  TempDir t;
  const std::string model = shared_path("models/stories260K").string();
  const std::string golden = "golden:" + shared_path("models/stories260K/golden/public.json").string();
  const fs::path ws = t.path() / "ws", dir = ws / "stories260k";
  const auto first = deploy_quick({model, "--workspace", ws.string(), "--reference", golden, "--last-phase", "4"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const fs::path snap = dir / "phases/phase4/registry";
  ASSERT_TRUE(fs::is_directory(snap));
  write_file(snap / "mine.txt", "my snapshot notes");
  write_file(snap / "sub/notes.json", "{\"mine\": true}");
  // A note in the deployment registry itself is the user's to keep there: it is not copied
  // into the snapshot (where it would be "found" and set aside on every re-run).
  write_file(dir / "registry" / "notes.txt", "my registry notes");
  const auto again = deploy_quick({model, "--workspace", ws.string(), "--reference", golden, "--from-phase", "4",
                             "--last-phase", "4"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_FALSE(fs::exists(snap / "mine.txt"));
  const auto kept_snap = files_named(dir / "phases/phase4", "registry.user-");
  ASSERT_EQ(kept_snap.size(), 1u) << again.err;
  EXPECT_EQ(read_file(kept_snap[0] / "mine.txt"), "my snapshot notes");
  EXPECT_EQ(read_file(kept_snap[0] / "sub/notes.json"), "{\"mine\": true}");
  EXPECT_FALSE(fs::exists(kept_snap[0] / "supported_kernels.md"));  // llmport's own: not "kept"
  EXPECT_FALSE(fs::exists(kept_snap[0] / "notes.txt"));
  EXPECT_FALSE(fs::exists(snap / "notes.txt"));
  EXPECT_TRUE(fs::exists(snap / "supported_kernels.md"));
  EXPECT_EQ(read_file(dir / "registry" / "notes.txt"), "my registry notes");
  const auto third = deploy_quick({model, "--workspace", ws.string(), "--reference", golden, "--from-phase", "4",
                             "--last-phase", "4"});
  ASSERT_EQ(third.exit_code, 0) << third.out << third.err;
  EXPECT_EQ(third.err.find("warning: " + snap.string()), std::string::npos) << third.err;
  EXPECT_EQ(files_named(dir / "phases/phase4", "registry.user-").size(), 1u);
  EXPECT_NE(line_with(again.err, "warning: " + snap.string() + " is llmport's").find("kept in " + kept_snap[0].string()),
            std::string::npos)
      << again.err;

  // The evaluator (phase 7's fresh process) clears kernel_cache/.
  const fs::path cache = dir / "kernel_cache";
  fs::create_directories(cache);
  write_file(cache / "mine.txt", "my cache notes");
  write_file(cache / "0123456789abcdef-fedcba9876543210.bin", "a stale cache entry");
  const auto ev = run_llmport({"evaluate", dir.string()});
  EXPECT_FALSE(fs::exists(cache / "mine.txt"));
  EXPECT_FALSE(fs::exists(cache / "0123456789abcdef-fedcba9876543210.bin"));
  const auto kept_cache = files_named(dir, "kernel_cache.user-");
  ASSERT_EQ(kept_cache.size(), 1u) << ev.out << ev.err;
  EXPECT_EQ(read_file(kept_cache[0] / "mine.txt"), "my cache notes");
  EXPECT_FALSE(fs::exists(kept_cache[0] / "0123456789abcdef-fedcba9876543210.bin"));
  EXPECT_NE(line_with(ev.err, "warning: " + cache.string() + " is llmport's").find("(mine.txt)"), std::string::npos)
      << ev.err;
}

// Phase 7 removes the evaluation report before the evaluator writes a new one (a stale one
// must not be read back as the verdict); an edited report was removed with it, silently.
// Now it is kept as evaluation_report.md.user-<time> with a warning on the console.
TEST(DeployPipeline, AnEditedEvaluationReportIsKeptWhenPhaseSevenReruns) {
  TempDir t;
  const std::string model = shared_path("models/stories260K").string();
  const std::string golden = "golden:" + shared_path("models/stories260K/golden/public.json").string();
  const fs::path ws = t.path() / "ws", dir = ws / "stories260k";
  const auto first = deploy_quick({model, "--workspace", ws.string(), "--reference", golden, "--quick"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const fs::path report = dir / "docs/evaluation_report.md";
  write_file(report, read_file(report) + "\nUSER EDIT LINE\n");
  const auto again = deploy_quick({model, "--workspace", ws.string(), "--reference", golden, "--quick", "--from-phase", "7"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(read_file(report).find("USER EDIT LINE"), std::string::npos);  // regenerated
  EXPECT_NE(read_file(report).find("Verdict: PASS"), std::string::npos);
  const auto kept = files_named(report.parent_path(), "evaluation_report.md.user-");
  ASSERT_EQ(kept.size(), 1u) << again.err;
  EXPECT_NE(read_file(kept[0]).find("USER EDIT LINE"), std::string::npos);
  EXPECT_NE(line_with(again.err, "warning: " + report.string() + " was edited since llmport wrote it"), "") << again.err;
  // Unedited, it is simply regenerated: no copy, no warning.
  const auto third = deploy_quick({model, "--workspace", ws.string(), "--reference", golden, "--quick", "--from-phase", "7"});
  ASSERT_EQ(third.exit_code, 0) << third.out << third.err;
  EXPECT_EQ(files_named(report.parent_path(), "evaluation_report.md.user-").size(), 1u);
  EXPECT_EQ(third.err.find("evaluation_report.md was edited"), std::string::npos) << third.err;
}

// deployment.json is llmport's record, rewritten by every phase; a key a user added to it (a
// note) was dropped by the next deploy without a word. Keys llmport does not write are kept.
TEST(DeployPipeline, AUsersKeyInDeploymentJsonSurvivesARedeploy) {
  TempDir t;
  const std::string model = shared_path("models/stories260K").string();
  const fs::path ws = t.path() / "ws", dir = ws / "stories260k";
  ASSERT_EQ(deploy_quick({model, "--workspace", ws.string(), "--last-phase", "0"}).exit_code, 0);
  nlohmann::json m = nlohmann::json::parse(read_file(dir / "deployment.json"));
  m["my_note"] = {{"owner", "me"}, {"ticket", 42}};
  write_file(dir / "deployment.json", m.dump(2));
  const auto r = deploy_quick({model, "--workspace", ws.string(), "--from-phase", "0", "--last-phase", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json after = nlohmann::json::parse(read_file(dir / "deployment.json"));
  EXPECT_EQ(after["my_note"], m["my_note"]);
  EXPECT_EQ(after["phases"][1]["status"], "PASS") << after["phases"][1].dump();
}

// A deployment made with --threads 1, resumed without the flag, ran at "all cores", wrote
// threads 0 into deployment.json, and its evaluation refused the tuned entries measured at
// one thread: a PASS turned FAIL. A resume keeps the recorded count unless told otherwise.
TEST(DeployPipeline, AResumeWithoutThreadsKeepsTheDeployedCount) {
  TempDir t;
  const std::string model = shared_path("models/stories260K").string();
  const std::string golden = "golden:" + shared_path("models/stories260K/golden/public.json").string();
  const fs::path ws = t.path() / "ws", dir = ws / "stories260k";
  const auto first = deploy_quick({model, "--workspace", ws.string(), "--reference", golden});  // --threads 1 --quick
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const auto again = run_llmport({"deploy", model, "--workspace", ws.string(), "--reference", golden, "--quick",
                                  "--from-phase", "7"});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "deployment.json"))["threads"], 1);
}

// A resume continues as deployed: `deploy MODEL --resume` without the --reference and
// --dtype the deployment was made with read them as the defaults (oracle, the checkpoint's
// dtype) and was refused as a change ("exists with a different reference ... -> oracle").
// Left out, they are deployment.json's; given and different, still refused.
TEST(DeployPipeline, APlainResumeContinuesWithTheDeployedReferenceAndDtype) {
  TempDir t;
  const std::string model = shared_path("models/stories260K").string();
  const std::string golden = "golden:" + shared_path("models/stories260K/golden/public.json").string();
  const fs::path ws = t.path() / "ws", dir = ws / "stories260k";
  const auto first =
      deploy_quick({model, "--workspace", ws.string(), "--reference", golden, "--dtype", "bf16", "--last-phase", "3"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  // A plain re-run asks whether to resume (the left-out reference is the deployed one, not a
  // change): with nobody to answer it is refused, answered "n" it leaves the deployment.
  const std::string before = read_file(dir / "deployment.json");
  const auto unanswered = deploy_quick({model, "--workspace", ws.string()});
  EXPECT_EQ(unanswered.exit_code, 2) << unanswered.out << unanswered.err;
  EXPECT_NE(unanswered.err.find("already exists and nobody answered whether to resume it"), std::string::npos)
      << unanswered.err;
  EXPECT_NE(unanswered.out.find("Resume at phase 4? [y/N]"), std::string::npos) << unanswered.out;
  const auto declined = deploy_quick({model, "--workspace", ws.string()}, "n\n");
  EXPECT_EQ(declined.exit_code, 0) << declined.out << declined.err;
  EXPECT_NE(declined.out.find("left deployment " + dir.string() + " unchanged"), std::string::npos) << declined.out;
  EXPECT_EQ(read_file(dir / "deployment.json"), before);
  const auto resumed = deploy_quick({model, "--workspace", ws.string(), "--resume"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  const auto m = nlohmann::json::parse(read_file(dir / "deployment.json"));
  EXPECT_EQ(m["dtype"], "bf16");
  EXPECT_NE(m["reference"].dump().find("public.json"), std::string::npos) << m["reference"].dump();
  EXPECT_NE(resumed.out.find("phase 7 (Independent evaluation): PASS"), std::string::npos) << resumed.out;
  const auto changed = deploy_quick({model, "--workspace", ws.string(), "--from-phase", "7", "--reference", "oracle"});
  EXPECT_EQ(changed.exit_code, 2) << changed.out << changed.err;
  EXPECT_NE(changed.err.find("exists with a different reference " + golden + " -> oracle"), std::string::npos)
      << changed.err;
  // A plain re-run (no --resume, no --reference) of the finished deployment: the left-out
  // reference is the deployed one, not oracle, and with every phase passed nothing is asked.
  const auto again = run_llmport({"deploy", model, "--workspace", ws.string(), "--threads", "1"});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("every phase has passed; nothing to do"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("Resume at phase"), std::string::npos) << again.out;
}

// Answers "y" to each --interactive question, running `edit` before answering the n-th.
class AnswerYes : public std::streambuf {
 public:
  AnswerYes(int n, std::function<void()> edit) : n_(n), edit_(std::move(edit)) {}

 protected:
  int_type underflow() override {
    if (++asked_ == n_) edit_();
    if (asked_ > 16) return traits_type::eof();
    setg(yes_, yes_, yes_ + 2);
    return traits_type::to_int_type(*gptr());
  }

 private:
  int n_, asked_ = 0;
  std::function<void()> edit_;
  char yes_[2] = {'y', '\n'};
};

// A golden replaced while an --interactive deploy waits after phase 3 gave phases 4-5
// verdicts on another file than phase 3's (a forgery then an honest file: PASS-with-
// warnings, then PASS); only phase 6's audit noticed. Each phase's verify now checks the
// recorded hash first: phase 4 is BLOCKED naming the file.
TEST(DeployPipeline, AGoldenReplacedBetweenPhasesBlocksTheNextVerify) {
  TempDir t;
  const fs::path golden = t.path() / "golden.json";
  const std::string honest = read_file(shared_path("models/stories260K/golden/public.json"));
  write_file(golden, honest);
  llmport::deploy::DeployOptions o;
  o.model = shared_path("models/stories260K").string();
  o.model_dir = o.model;
  o.reference = "golden:" + golden.string();
  o.workspace = t.path() / "ws";
  o.interactive = true;
  o.threads = 1;
  o.threads_given = true;
  o.quick = true;
  o.last_phase = 5;  // phases 6-7 run this binary as llmport (self_executable): not in-process
  // Questions follow phases 0, 1, 2, 3: the edit lands before phase 4 starts.
  AnswerYes answers(4, [&] {
    nlohmann::json g = nlohmann::json::parse(honest);
    g["title"] = g.value("title", std::string()) + " (edited)";
    write_file(golden, g.dump());
  });
  std::istream in(&answers);
  std::ostringstream out;
  const int rc = llmport::deploy::run_deploy(o, in, out);
  EXPECT_NE(rc, 0) << out.str();
  EXPECT_NE(out.str().find("phase 3 (Full model): PASS"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("phase 4 (Prefill optimization): BLOCKED"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(golden.string() + " changed since deployment"), std::string::npos) << out.str();
}

// `make clean` removes what llmport wrote in kernel_cache/ and verify/reports/ and nothing
// else: a file of the user's there was deleted by `rm -rf` (the fresh-user walk of session
// 35), though phase 7 keeps such files. Directories left empty go too.
TEST(DeployPipeline, MakeCleanRemovesOnlyWhatLlmportWrote) {
  TempDir t;
  const fs::path ws = t.path() / "ws", dir = ws / "stories260k";
  ASSERT_EQ(deploy_quick({shared_path("models/stories260K").string(), "--workspace", ws.string(), "--last-phase", "0"})
                .exit_code,
            0);
  const fs::path cache = dir / "kernel_cache", reports = dir / "verify" / "reports";
  fs::create_directories(cache);
  fs::create_directories(reports / "20261207-170000-1");
  fs::create_directories(reports / "20261207-170001-2");
  write_file(cache / "0123abcd-89ef0123.bin", "packed");
  write_file(cache / "mine.txt", "my notes");
  write_file(reports / "20261207-170000-1" / "report.md", "r");
  write_file(reports / "20261207-170000-1" / "report.json", "{}");
  write_file(reports / "20261207-170001-2" / "diagnosis.svg", "<svg/>");
  write_file(reports / "20261207-170001-2" / "notes.md", "mine");
  const auto r = run_make({"-C", dir.string(), "clean"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(cache / "0123abcd-89ef0123.bin"));
  EXPECT_EQ(read_file(cache / "mine.txt"), "my notes");
  EXPECT_FALSE(fs::exists(reports / "20261207-170000-1"));  // emptied, removed
  EXPECT_FALSE(fs::exists(reports / "20261207-170001-2" / "diagnosis.svg"));
  EXPECT_EQ(read_file(reports / "20261207-170001-2" / "notes.md"), "mine");
  // Nothing left to clean, or nothing there at all: still exit 0.
  EXPECT_EQ(run_make({"-C", dir.string(), "clean"}).exit_code, 0);
  fs::remove_all(cache);
  fs::remove_all(dir / "verify");
  EXPECT_EQ(run_make({"-C", dir.string(), "clean"}).exit_code, 0);
}

}  // namespace
