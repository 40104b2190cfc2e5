// Phase 7, independent evaluation: a fresh `llmport evaluate DIR` process (reading only the
// deployment) audits the gates, re-runs verify --full from a cleared kernel cache and
// writes docs/evaluation_report.md; this phase reads back its verdict.
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "deploy/evaluation_report.hpp"
#include "deploy/generated_file.hpp"
#include "deploy/kernel_tuning.hpp"
#include "deploy/phase.hpp"
#include "deploy/process.hpp"
#include "deploy/util.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;
namespace {

// ": <the log's last line starting with "error: ">", or "" when it has none.
std::string last_error_line(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (line.rfind("error: ", 0) == 0) last = line.substr(7);
  return last.empty() ? "" : ": " + last;
}

class Phase7 : public Phase {
 public:
  int index() const override { return 7; }
  std::string gate() const override { return "independent evaluation"; }

  PhaseResult run(Context& ctx) override {
    ctx.m.save(ctx.ws.manifest());  // the evaluator reads the manifest as it is now
    fs::path report = ctx.ws.evaluation_report();
    remove_generated(ctx.ws, report);  // a user's edit is kept aside, with a warning here on the console
    fs::path log = ctx.ws.phase_dir(7) / "evaluate.log";
    fs::remove(log);
    // The evaluator clears the kernel cache; a user's file there is moved aside first, here,
    // so the warning reaches the user's console rather than the evaluator's log.
    set_aside_user_files_in_kernel_cache(ctx.ws.kernel_cache(), std::cerr);
    std::vector<std::string> argv = {self_executable().string(), "evaluate", ctx.ws.dir().string()};
    Stopwatch sw;
    int rc = run_process(argv, log);
    ctx.runtime_s += sw.seconds();
    nlohmann::json num = {{"evaluator_exit", rc}, {"log", "phases/phase7/evaluate.log"}};
    // No report: the evaluation did not happen (an unwritable docs/ or reports directory, a
    // killed process), which says nothing about the model: BLOCKED, with the evaluator's own
    // error, not a FAIL that asks a human to review the deployment.
    if (!fs::exists(report))
      return make_result(7, PhaseStatus::Blocked,
                         fmt::format("the evaluator (exit {}) wrote no docs/evaluation_report.md{}; see "
                                     "phases/phase7/evaluate.log",
                                     rc, last_error_line(log)),
                         num);
    std::string verdict = read_verdict(report);
    num["verdict"] = verdict;
    PhaseResult r;
    if (verdict == "PASS") {
      r = make_result(7, PhaseStatus::Pass, "evaluation verdict PASS (docs/evaluation_report.md)", num);
    } else if (verdict == "PASS-with-warnings") {
      r = make_result(7, PhaseStatus::PassWithWarnings,
                      "evaluation verdict PASS-with-warnings (docs/evaluation_report.md)", num);
      r.warnings = read_report_warnings(report);
    } else {
      r = make_result(7, PhaseStatus::Fail,
                      "evaluation verdict " + (verdict.empty() ? std::string("missing") : verdict) +
                          ": needs-human-review (docs/evaluation_report.md)",
                      num);
      ctx.m.needs_human_review = true;
    }
    r.artifacts = {"docs/evaluation_report.md", "phases/phase7/evaluate.log"};
    return r;
  }
};

}  // namespace

std::unique_ptr<Phase> make_phase7_evaluation() { return std::make_unique<Phase7>(); }

}  // namespace llmport::deploy
