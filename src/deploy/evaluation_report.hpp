#pragma once
// docs/evaluation_report.md: title, then exactly `Verdict: PASS` | `Verdict:
// PASS-with-warnings` | `Verdict: FAIL`, then the sections Gate audit, Re-run, Reproduce.
#include <filesystem>
#include <string>
#include <vector>

namespace llmport::deploy {

/// One audited item.
struct AuditItem {
  std::string check;
  std::string result;  ///< "ok" | "warning" | "FAIL"
  std::string detail;
};

struct EvaluationReport {
  std::string name;
  std::string verdict;  ///< "PASS" | "PASS-with-warnings" | "FAIL"
  std::vector<AuditItem> audit;
  std::string rerun_markdown;  ///< Re-run section body
  std::vector<std::string> reproduce;  ///< shell commands
  std::string generated_at;
  /// Verdict from the audit: any FAIL -> FAIL, else any warning -> PASS-with-warnings.
  static std::string verdict_of(const std::vector<AuditItem>& audit);
  std::string to_markdown() const;
};

/// The verdict on the line after the title ("" when the file does not follow the format).
std::string read_verdict(const std::filesystem::path& report);
/// Details of the audit rows marked "warning".
std::vector<std::string> read_report_warnings(const std::filesystem::path& report);

}  // namespace llmport::deploy
