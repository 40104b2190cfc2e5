// Phase verdicts, timing and results as stored in deployment.json.
#include <array>

#include "deploy/manifest_fields.hpp"
#include "llmport/deploy.hpp"
#include "llmport/error.hpp"

namespace llmport::deploy {

namespace {
constexpr std::array<std::string_view, kNumPhases> kPhaseNames = {
    "Reference baseline",     "Kernel validation",    "Single block",
    "Full model",             "Prefill optimization", "Decode optimization",
    "Finalize",               "Independent evaluation"};
}  // namespace

std::string_view status_name(PhaseStatus s) noexcept {
  switch (s) {
    case PhaseStatus::NotRun: return "NOT-RUN";
    case PhaseStatus::Pass: return "PASS";
    case PhaseStatus::PassWithWarnings: return "PASS-with-warnings";
    case PhaseStatus::Fail: return "FAIL";
    case PhaseStatus::Blocked: return "BLOCKED";
  }
  return "NOT-RUN";
}

PhaseStatus parse_status(std::string_view s) {
  for (auto st : {PhaseStatus::NotRun, PhaseStatus::Pass, PhaseStatus::PassWithWarnings,
                  PhaseStatus::Fail, PhaseStatus::Blocked})
    if (status_name(st) == s) return st;
  throw ConfigError("unknown phase status '" + std::string(s) +
                    "' (expected NOT-RUN, PASS, PASS-with-warnings, FAIL or BLOCKED)");
}

bool is_pass(PhaseStatus s) noexcept {
  return s == PhaseStatus::Pass || s == PhaseStatus::PassWithWarnings;
}

std::string_view phase_name(int i) {
  if (i < 0 || i >= kNumPhases) throw UsageError("phase " + std::to_string(i) + " does not exist (0-7)");
  return kPhaseNames[static_cast<std::size_t>(i)];
}

nlohmann::json PhaseTiming::to_json() const {
  return {{"start", start},           {"end", end},
          {"wall_min", wall_min},     {"compile_min", compile_min},
          {"runtime_s", runtime_s},   {"residual_min", residual_min()}};
}

PhaseTiming PhaseTiming::from_json(const nlohmann::json& j) {
  PhaseTiming t;
  if (!j.is_object()) return t;
  t.start = j.value("start", "");
  t.end = j.value("end", "");
  t.wall_min = j.value("wall_min", 0.0);
  t.compile_min = j.value("compile_min", 0.0);
  t.runtime_s = j.value("runtime_s", 0.0);
  return t;
}

nlohmann::json PhaseResult::to_json() const {
  return {{"phase", phase},
          {"name", std::string(phase_name(phase))},
          {"status", std::string(status_name(status))},
          {"reason", reason},
          {"numbers", numbers},
          {"warnings", warnings},
          {"artifacts", artifacts},
          {"timing", timing.to_json()}};
}

PhaseResult PhaseResult::from_json(const nlohmann::json& j, const std::string& path) {
  const ManifestFields f(j, path);
  PhaseResult r;
  r.phase = static_cast<int>(f.integer("phase", 0, 0, kNumPhases - 1));
  try {
    r.status = parse_status(f.get<std::string>("status", "NOT-RUN"));
  } catch (const ConfigError& e) {
    throw ConfigError(f.name("status") + ": " + e.what());
  }
  r.reason = f.get<std::string>("reason", "");
  if (f.has("numbers")) r.numbers = f.raw("numbers");
  r.warnings = f.get<std::vector<std::string>>("warnings", {});
  r.artifacts = f.get<std::vector<std::string>>("artifacts", {});
  if (f.has("timing")) r.timing = PhaseTiming::from_json(f.raw("timing"));
  return r;
}

}  // namespace llmport::deploy
