#include "deploy/evaluation_report.hpp"

#include <fstream>
#include <sstream>

#include "deploy/util.hpp"

namespace llmport::deploy {

std::string EvaluationReport::verdict_of(const std::vector<AuditItem>& audit) {
  bool warn = false;
  for (const auto& a : audit) {
    if (a.result == "FAIL") return "FAIL";
    warn |= a.result == "warning";
  }
  return warn ? "PASS-with-warnings" : "PASS";
}


std::string EvaluationReport::to_markdown() const {
  std::ostringstream o;
  o << "# Evaluation report: " << name << "\n";
  o << "Verdict: " << verdict << "\n\n";
  o << "Independent evaluation by a fresh llmport process that read only the deployment "
       "(deployment.json, registry/, the model it names), generated " << generated_at << ".\n\n";
  o << "## Gate audit\n\n| check | result | detail |\n|---|---|---|\n";
  for (const auto& a : audit) o << "| " << md_cell(a.check) << " | " << a.result << " | " << md_cell(a.detail) << " |\n";
  o << "\n## Re-run\n\n" << rerun_markdown << "\n";
  o << "## Reproduce\n\n```sh\n";
  for (const auto& c : reproduce) o << c << "\n";
  o << "```\n";
  return o.str();
}

std::string read_verdict(const std::filesystem::path& report) {
  std::ifstream in(report);
  std::string title, line;
  if (!std::getline(in, title) || title.rfind("# ", 0) != 0) return "";
  if (!std::getline(in, line)) return "";
  for (const char* v : {"PASS", "PASS-with-warnings", "FAIL"})
    if (line == std::string("Verdict: ") + v) return v;
  return "";
}

std::vector<std::string> read_report_warnings(const std::filesystem::path& report) {
  std::ifstream in(report);
  std::vector<std::string> w;
  std::string line;
  while (std::getline(in, line)) {
    auto p = line.find("| warning |");
    if (line.rfind("| ", 0) == 0 && p != std::string::npos) {
      std::string check = line.substr(2, p - 3);
      std::string detail = line.substr(p + 12);
      if (!detail.empty() && detail.back() == '|') detail.pop_back();
      while (!detail.empty() && detail.back() == ' ') detail.pop_back();
      w.push_back(md_uncell(check) + ": " + md_uncell(detail));
    }
  }
  return w;
}

}  // namespace llmport::deploy
