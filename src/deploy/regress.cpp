// `llmport regress`: re-verify every deployment of a workspace with its own settings (the
// deployment's backend, dtype, tuned kernels and reference), one deployment per device at a
// time (an flock per target, shared by every llmport process on the machine), after checking
// that the model files and the golden still hash as deployment.json records.
#include <fmt/format.h>

#include <ostream>

#include "deploy/audit.hpp"
#include "deploy/docs_writer.hpp"
#include "deploy/kernel_tuning.hpp"
#include "deploy/manifest.hpp"
#include "deploy/util.hpp"
#include "deploy/verify_step.hpp"
#include "deploy/workspace.hpp"
#include "llmport/error.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

namespace {
fs::path device_lock(const std::string& target) {
  const char* d = std::getenv("LLMPORT_LOCK_DIR");
  fs::path dir = (d && *d) ? fs::path(d) : fs::temp_directory_path();
  return dir / fmt::format("llmport-device-{}.lock", target);
}
}  // namespace

int run_regress(const fs::path& workspace, std::ostream& out) {
  require_workspace_dir(workspace);
  auto deps = list_deployments(workspace);
  if (deps.empty()) {
    out << "no deployments in " << workspace.string() << "\n";
    return kExitOk;
  }
  int failed = 0;
  for (const auto& d : deps) {
    Workspace ws(fs::weakly_canonical(d));
    Manifest m;
    try {
      m = Manifest::load(ws.manifest());
    } catch (const std::exception& e) {  // count it as failed and re-verify the others
      ++failed;
      out << fmt::format("{:<28} UNREADABLE: {}\n", d.filename().string(), e.what());
      continue;
    }
    if (m.first_unpassed() < 6) {  // the tuned configs exist once phases 0-5 passed
      out << fmt::format("{:<28} SKIP (not deployed: phase {} has not passed)\n", m.name, m.first_unpassed());
      continue;
    }
    std::string line;
    bool pass = false;
    // The weights first, with evaluate's check: the gate re-run on other weights than the
    // deployed ones says nothing about the deployment (a tensor scaled by 2% may well still
    // pass the KLD gate), so changed weights FAIL without it.
    std::map<std::string, FileStat> stats;
    const AuditItem weights = audit_model_files(m, m.model_dir, &stats);
    const AuditItem golden = audit_golden_file(m);
    if (weights.result != "ok") {
      line = "FAIL: " + weights.detail;
    } else if (golden.result != "ok") {
      line = "FAIL: " + golden.detail;
    } else {
      // Hashes match: the sizes and mtimes `status` compares are current again (a file
      // copied back in place keeps its content but not its mtime).
      m.file_stats = stats;
      // Anything one deployment's files make fail (a damaged registry file, a report
      // directory it cannot write) is that deployment's ERROR: the others are still
      // re-verified (it stopped the whole run, exit 2, no summary).
      try {
        FileLock lock(device_lock(m.target));  // one deployment per device at a time
        fs::path dir = fresh_dir(ws.verify_reports(), "regress");
        fs::remove(dir);
        EngineOptions eo = stage_engine_options(m, ws.dir(), ConfigStage::Tuned, m.threads);
        VerifyOptions vo = deployment_verify_options(m, eo, dir);
        vo.kernel_configs = stage_label(ws.dir(), ConfigStage::Tuned);
        vo.golden_layers = true;  // as `make verify`: the tuned kernels at every layer of a golden too
        VerifyResult r = run_verify(m.model_dir, vo);
        pass = r.pass;
        line = verify_summary(r);
      } catch (const std::exception& e) {
        line = std::string("ERROR: ") + e.what();
      }
    }
    failed += pass ? 0 : 1;
    m.measured["last regress"] = fmt::format("{} {}", now_iso(), pass ? "PASS" : "FAIL");
    m.save(ws.manifest());
    log_progress(ws, "regress: " + line);
    out << fmt::format("{:<28} {:<6} {:<5} {}\n", m.name, m.target, m.dtype, line);
  }
  out << fmt::format("regress: {} of {} deployments FAIL or unreadable\n", failed, deps.size());
  return failed ? kExitCheckFailed : kExitOk;
}

std::string check_deployed_weights(const fs::path& deployment_dir, const fs::path& model_dir) {
  const Manifest m = load_deployment_arg(deployment_dir);
  const AuditItem weights = audit_model_files(m, model_dir);
  if (weights.result != "ok") return weights.detail;
  const AuditItem golden = audit_golden_file(m);
  return golden.result == "ok" ? "" : golden.detail;
}

}  // namespace llmport::deploy
