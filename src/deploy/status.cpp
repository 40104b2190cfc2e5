// `llmport status [NAME]`: the phase table of one deployment or of all in a workspace, each
// with its state (a deployment whose model files changed is not shown as deployed).
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ostream>

#include "deploy/audit.hpp"
#include "deploy/manifest.hpp"
#include "deploy/util.hpp"
#include "deploy/workspace.hpp"
#include "llmport/error.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> deployments_in_dir(const fs::path& workspace) {
  std::vector<fs::path> v;
  if (!fs::is_directory(workspace)) return v;
  for (const auto& e : fs::directory_iterator(workspace))
    if (e.is_directory() && Workspace(e.path()).is_deployment()) v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

std::string short_status(PhaseStatus s) {
  switch (s) {
    case PhaseStatus::Pass: return "PASS";
    case PhaseStatus::PassWithWarnings: return "PASS~";
    case PhaseStatus::Fail: return "FAIL";
    case PhaseStatus::Blocked: return "BLOCK";
    default: return "-";
  }
}

// "" when the model files are still the deployed ones, else what differs. Cheap on purpose:
// status is run often and a model may be many GB, so it compares each file's size and mtime
// with those recorded when it was hashed (a stat per file), and says "changed?": a stat
// that differs is no proof of other bytes, nor one that matches of the same bytes: regress
// and `make verify` hash. A manifest without recorded stats (written before llmport
// recorded them) is hashed instead, until a regress records them.
std::string weights_changed(const Manifest& m, const fs::path& model_dir) {
  if (m.file_hashes.empty()) return "";  // nothing recorded to compare with (phase 6 requires it)
  if (m.file_stats.empty()) {
    const AuditItem a = audit_model_files(m, model_dir);
    return a.result == "ok" ? "" : a.detail;
  }
  const auto changed = stat_changed_files(m, model_dir);
  if (changed.empty()) return "";
  return "weights changed? " + join(changed, ", ") +
         ": size or mtime differs from deployment (not verified: `llmport regress` checks the hashes)";
}

// Whether a deploy holds this deployment's lock now (pipeline.cpp takes it for the whole
// run). Probed with a shared lock on the file as it is: nothing is created or left held.
bool deploy_running(const fs::path& workspace, const std::string& name) {
  const int fd = ::open(deployment_lock_file(workspace, name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // drops the shared lock if it was taken
  return held;
}

std::string state_of(const Manifest& m, const fs::path& workspace) {
  std::string state;
  const int fu = m.first_unpassed();
  if (m.needs_human_review) {
    state = "needs-human-review";
  } else if (fu == kNumPhases) {
    state = "deployed";
  } else {
    const auto& p = m.phases[static_cast<std::size_t>(fu)];
    // A phase not run is in progress only while a deploy holds the lock; otherwise the run
    // stopped there (interrupted, or answered "no" under --interactive).
    state = p.status != PhaseStatus::NotRun ? fmt::format("stopped at phase {} ({})", fu, status_name(p.status))
            : deploy_running(workspace, m.name) ? fmt::format("in progress (next: phase {})", fu)
                                                : fmt::format("stopped before phase {} (not running; deploy "
                                                              "--resume continues)", fu);
  }
  const std::string changed = weights_changed(m, m.model_dir);
  if (changed.empty()) return state;
  // A deployment whose weights moved is no longer known to be deployed: the word goes.
  return state == "deployed" ? changed : state + "; " + changed;
}

std::string model_drift(const Manifest& m, const fs::path& model_dir) {
  // MODEL may name the model's config.json, as every command accepts.
  const fs::path dir = fs::is_regular_file(model_dir) ? model_dir.parent_path() : model_dir;
  std::error_code ec;
  if (!fs::equivalent(dir, m.model_dir, ec)) return dir.string() + " is not the deployed model " + m.model_dir.string();
  return weights_changed(m, dir);
}

std::string not_passed(const Manifest& m) {
  if (const int i = m.first_unpassed(); i < kNumPhases) {
    const PhaseResult& p = m.phases[static_cast<std::size_t>(i)];
    return fmt::format("phase {} ({}) is {}{}", i, phase_name(i), status_name(p.status),
                       p.reason.empty() ? "" : ": " + p.reason);
  }
  return m.needs_human_review ? "flagged for human review (evaluation_report.md)" : "";
}

}  // namespace

std::vector<fs::path> list_deployments(const fs::path& workspace) { return deployments_in_dir(workspace); }

DeploymentRun read_deployment_run(const fs::path& deployment_dir, const fs::path& model_dir) {
  const Manifest m = load_deployment_arg(deployment_dir);
  DeploymentRun r;
  r.model_dir = m.model_dir;
  r.name = m.name;
  r.dtype = m.dtype;
  r.quantize_lm_head = m.quantize_lm_head;
  r.threads = m.threads;
  r.drift = model_drift(m, model_dir.empty() ? m.model_dir : model_dir);
  r.not_passed = not_passed(m);
  return r;
}

void require_workspace_dir(const fs::path& workspace) {
  std::error_code ec;
  if (fs::is_directory(workspace, ec)) return;
  if (fs::exists(workspace, ec)) throw UsageError("workspace " + workspace.string() + " is not a directory");
  // status() fails for a path under a directory this user cannot search (EACCES): the
  // workspace may well exist; say why it cannot be looked at instead of "does not exist".
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw UsageError("workspace " + workspace.string() + ": cannot be read: " + ec.message());
  throw UsageError("workspace " + workspace.string() + " does not exist");
}

int print_status(const fs::path& workspace, const std::string& name, std::ostream& out, bool json) {
  if (!name.empty()) {
    Workspace ws(workspace / name);
    if (!ws.is_deployment())
      throw UsageError(fmt::format("no deployment '{}' in {} (no {})", name, workspace.string(),
                                   ws.manifest().string()));
    Manifest m = Manifest::load(ws.manifest());
    if (json) {
      out << m.to_json().dump(2) << "\n";
      return kExitOk;
    }
    out << fmt::format("deployment {}: {}\nmodel {} ({})\ntarget {}, dtype {}, reference {}\n\n", m.name,
                       state_of(m, workspace), m.model_dir.string(), m.architecture, m.target, m.dtype, m.reference.to_arg());
    out << fmt::format("{:<6} {:<24} {:<20} {:>9}  {}\n", "phase", "name", "status", "wall min", "reason");
    for (const auto& p : m.phases)
      out << fmt::format("{:<6} {:<24} {:<20} {:>9.3f}  {}\n", p.phase, phase_name(p.phase), status_name(p.status),
                         p.timing.wall_min, p.reason);
    return kExitOk;
  }
  auto deps = deployments_in_dir(workspace);
  require_workspace_dir(workspace);
  bool unreadable = false;  // a row that could not be read: listed, and exit 2 at the end
  if (json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& d : deps) {
      Manifest m;
      try {
        m = Manifest::load(Workspace(d).manifest());
      } catch (const std::exception& e) {  // one bad manifest must not hide the others
        a.push_back({{"name", d.filename().string()}, {"state", std::string("unreadable: ") + e.what()}});
        unreadable = true;
        continue;
      }
      nlohmann::json ph = nlohmann::json::array();
      for (const auto& p : m.phases) ph.push_back(std::string(status_name(p.status)));
      a.push_back({{"name", m.name}, {"target", m.target}, {"dtype", m.dtype}, {"state", state_of(m, workspace)}, {"phases", ph}});
    }
    out << a.dump(2) << "\n";
    return unreadable ? kExitBadInput : kExitOk;
  }
  if (deps.empty()) {
    out << "no deployments in " << workspace.string() << "\n";
    return kExitOk;
  }
  out << fmt::format("{:<28} {:<6} {:<5}", "name", "target", "dtype");
  for (int i = 0; i < kNumPhases; ++i) out << fmt::format(" {:<5}", fmt::format("p{}", i));
  out << "  state\n";
  for (const auto& d : deps) {
    Manifest m;
    try {
      m = Manifest::load(Workspace(d).manifest());
    } catch (const std::exception& e) {  // flag the row, keep listing the others
      out << fmt::format("{:<28} unreadable: {}\n", d.filename().string(), e.what());
      unreadable = true;
      continue;
    }
    out << fmt::format("{:<28} {:<6} {:<5}", m.name, m.target, m.dtype);
    for (const auto& p : m.phases) out << fmt::format(" {:<5}", short_status(p.status));
    out << "  " << state_of(m, workspace) << "\n";
  }
  out << "(PASS~ = PASS-with-warnings)\n";
  return unreadable ? kExitBadInput : kExitOk;
}

}  // namespace llmport::deploy
