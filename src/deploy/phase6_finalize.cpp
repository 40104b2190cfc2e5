// Phase 6, finalize: the manifest is complete, `make verify` from the workspace PASSES
// (the Makefile a user runs, through a child process), the README carries measured numbers.
#include <fmt/format.h>

#include "deploy/docs_writer.hpp"
#include "deploy/phase.hpp"
#include "deploy/process.hpp"
#include "deploy/util.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;
namespace {

// The last non-empty line of a log (verify prints its verdict line last).
std::string last_line(const std::string& text) {
  const std::string t = text.substr(0, text.find_last_not_of("\n\r \t") + 1);
  return t.substr(t.rfind('\n') + 1);
}

std::vector<std::string> manifest_gaps(const Manifest& m) {
  std::vector<std::string> gaps;
  if (m.content_hash.empty()) gaps.push_back("model content hash");
  if (!m.file_hashes.count("config.json")) gaps.push_back("config.json hash");
  bool weights = false;
  for (const auto& [f, h] : m.file_hashes) weights |= f.ends_with(".safetensors");
  if (!weights) gaps.push_back("weight file hashes");
  if (m.target.empty()) gaps.push_back("target");
  if (m.dtype.empty()) gaps.push_back("dtype");
  if (m.reference.kind == "golden" && m.reference_hash.empty()) gaps.push_back("golden file hash");
  for (int i = 0; i < 6; ++i)
    if (!is_pass(m.phases[static_cast<std::size_t>(i)].status))
      gaps.push_back(fmt::format("phase {} status", i));
  if (!m.kernel_configs.contains("phase1")) gaps.push_back("phase-1 kernel rows");
  if (!m.kernel_configs.contains("tuned")) gaps.push_back("tuned kernel configs");
  return gaps;
}

class Phase6 : public Phase {
 public:
  int index() const override { return 6; }
  std::string gate() const override { return "finalize"; }

  PhaseResult run(Context& ctx) override {
    nlohmann::json num;
    auto gaps = manifest_gaps(ctx.m);
    num["manifest_gaps"] = gaps;
    if (!gaps.empty()) {
      return make_result(6, PhaseStatus::Fail, "manifest incomplete: " + join(gaps, ", "), num);
    }
    // README and Makefile as the user will see them, then the user's own command.
    ctx.m.save(ctx.ws.manifest());
    write_all(ctx.ws, ctx.m, ctx.cfg);
    std::string readme = slurp(ctx.ws.readme());
    // The Measured table's row, not the words: the static Profile section names both.
    for (const char* key : {"prefill tokens/s", "decode tokens/s"}) {
      const auto it = ctx.m.measured.find(key);
      const bool measured = it != ctx.m.measured.end() && it->is_number() && it->get<double>() > 0;
      if (!measured || readme.find(fmt::format("| {} | ", key)) == std::string::npos)
        return make_result(6, PhaseStatus::Fail,
                           fmt::format("README lacks the measured '{}' (phases 4-5 record it in deployment.json's "
                                       "measured)",
                                       key),
                           num);
    }
    fs::path log = ctx.ws.phase_dir(6) / "make_verify.log";
    fs::remove(log);
    Stopwatch sw;
    int rc = run_process({"make", "--no-print-directory", "-C", ctx.ws.dir().string(), "verify",
                          "LLMPORT=" + makefile_dquoted(self_executable().string())},
                         log);
    ctx.runtime_s += sw.seconds();
    num["make_verify_exit"] = rc;
    num["make_verify_log"] = "phases/phase6/make_verify.log";
    PhaseResult r;
    if (rc != 0)
      r = make_result(6, PhaseStatus::Fail,
                      fmt::format("`make verify` in the workspace exited {} (see phases/phase6/make_verify.log)", rc), num);
    else if (const std::string v = last_line(slurp(log)); v.rfind("PASS-with-warnings", 0) == 0) {
      // The user's own command says its verdict is capped: so is this phase.
      r = make_result(6, PhaseStatus::PassWithWarnings,
                      "manifest complete; `make verify` from the workspace: " + v + "; README has the measured numbers",
                      num);
      r.warnings.push_back("`make verify`: " + v);
    } else {
      r = make_result(6, PhaseStatus::Pass,
                      "manifest complete; `make verify` from the workspace PASSES; README has the measured numbers", num);
    }
    r.artifacts.push_back("phases/phase6/make_verify.log");
    return r;
  }
};

}  // namespace

std::unique_ptr<Phase> make_phase6_finalize() { return std::make_unique<Phase6>(); }

}  // namespace llmport::deploy
