// CLI usage errors: one `error: ` line plus a --help hint and exit 2 for CLI11 parse errors,
// plain range messages, MODEL reported before the prompt, exit codes in --help, and the
// warning for an unknown config.json torch_dtype.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmport/kernels.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;

std::string stories() { return shared_path("models/stories260K").string(); }

TEST(CliParseErrors, UnknownFlagGetsErrorPrefixAndHelpHint) {
  const auto r = run_llmport({"run", stories(), "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(see llmport run --help)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  const auto none = run_llmport({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err.rfind("error: ", 0), 0u) << none.err;
  EXPECT_NE(none.err.find("(see llmport --help)"), std::string::npos) << none.err;
  const auto unknown = run_llmport({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err, "error: unknown command 'frobnicate' (see llmport --help)\n");
  const auto help = run_llmport({"run", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.err.find("error:"), std::string::npos) << help.err;
}

// The thread-count message names the machine's limit (4 x its hardware threads).
std::string threads_error(const std::string& got) {
  return "error: --threads: must be a whole number from 0 (all cores) to " +
         std::to_string(max_backend_threads()) + " (4 x this machine's hardware threads), got " + got;
}

TEST(CliParseErrors, RangeChecksSayWhatIsAccepted) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"run", stories(), "--prompt", "hi", "--n-tokens", "0"}, "error: --n-tokens: must be >= 1, got 0"},
      {{"run", stories(), "--prompt", "hi", "--temperature", "-1"}, "error: --temperature: must be >= 0, got -1"},
      {{"run", stories(), "--prompt", "hi", "--top-p", "0"}, "error: --top-p: must be in (0, 1], got 0"},
      {{"run", stories(), "--prompt", "hi", "--top-p", "1.5"}, "error: --top-p: must be in (0, 1], got 1.5"},
      {{"run", stories(), "--prompt", "hi", "--min-p", "2"}, "error: --min-p: must be in [0, 1], got 2"},
      {{"run", stories(), "--prompt", "hi", "--repeat-penalty", "0"}, "error: --repeat-penalty: must be > 0, got 0"},
      {{"run", stories(), "--prompt", "hi", "--temperature", "inf"}, "error: --temperature: expects a finite number, got 'inf'"},
      {{"run", stories(), "--prompt", "hi", "--repeat-penalty", "inf"}, "error: --repeat-penalty: expects a finite number, got 'inf'"},
      {{"run", stories(), "--prompt", "hi", "--max-seq", "0"}, "error: --max-seq: must be >= 1, got 0"},
      {{"check", stories(), "--max-seq", "0"}, "error: --max-seq: must be >= 1, got 0"},
      {{"verify", stories(), "--max-seq", "-3"}, "error: --max-seq: must be >= 1, got -3"},
      {{"diagnosis", stories(), "--max-seq", "0"}, "error: --max-seq: must be >= 1, got 0"},
      {{"deploy", stories(), "--threads", "-1"}, threads_error("-1")},
      {{"deploy", stories(), "--threads", "100000"}, threads_error("100000")},
      {{"bench", stories(), "-t", "100000"}, threads_error("100000")},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.want);
    const auto r = run_llmport(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind(c.want + " (see llmport ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_EQ(r.err.find("1797693"), std::string::npos) << r.err;
  }
  // --top-p 1 (the documented upper end) is accepted.
  const auto ok = run_llmport({"run", stories(), "--prompt", "hi", "--top-p", "1", "--n-tokens", "2"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const auto help = run_llmport({"run", "--help"});
  EXPECT_NE(help.out.find("--top-p FLOAT:in (0, 1]"), std::string::npos) << help.out;
}

// An empty --dtype / --quantize-lm-head is refused (it used to mean "not given": the
// checkpoint's dtype, an unquantized lm_head), on nested commands too.
TEST(CliParseErrors, AnEmptyDtypeOrLmHeadFormatIsAUsageError) {
  const std::vector<std::vector<std::string>> cases = {
      {"run", stories(), "--prompt", "Once", "--dtype", ""},
      {"kernels", "validate", stories(), "--dtype", "q8_0", "--quantize-lm-head", ""},
      {"check", stories(), "--dtype", "q4_0", "--quantize-lm-head", ""},
      {"bench", stories(), "--no-roofline", "--dtype", ""}};
  for (const auto& args : cases) {
    const auto r = run_llmport(args);
    SCOPED_TRACE(args[0] + " " + args[args.size() - 2]);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("empty value"), std::string::npos) << r.err;
    const std::string flag = args[args.size() - 2];
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
  }
}

TEST(CliRunArgs, MissingModelIsReportedBeforeMissingPrompt) {
  const auto r = run_llmport({"run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: MODEL is required (a model directory or org/name id)\n");
  const auto p = run_llmport({"run", stories()});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("error: a prompt is required"), std::string::npos) << p.err;
}

TEST(CliHelp, CheckAndVerifyListTheirExitCodes) {
  const auto c = run_llmport({"check", "--help"});
  EXPECT_EQ(c.exit_code, 0);
  for (const char* s : {"0 ACCEPT", "3 REJECT", "2 bad input"}) EXPECT_NE(c.out.find(s), std::string::npos) << s;
  const auto v = run_llmport({"verify", "--help"});
  EXPECT_EQ(v.exit_code, 0);
  for (const char* s : {"0 PASS", "1 FAIL", "2 bad input", "3 architecture rejected"})
    EXPECT_NE(v.out.find(s), std::string::npos) << s;
}

TEST(CliDtype, UnknownTorchDtypeWarnsInCheckAndRun) {
  TempDir t;
  for (const auto& e : fs::directory_iterator(stories()))
    if (e.is_regular_file()) fs::copy_file(e.path(), t.path() / e.path().filename());
  auto cfg = nlohmann::json::parse(read_file(t.path() / "config.json"));
  cfg["torch_dtype"] = "float7";
  write_file(t.path() / "config.json", cfg.dump(2));

  const auto c = run_llmport({"check", t.path().string()});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.err.find("warning: "), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("config.json: torch_dtype \"float7\" is not a known dtype"), std::string::npos) << c.err;
  const auto cj = run_llmport({"check", t.path().string(), "--json"});
  ASSERT_EQ(cj.exit_code, 0) << cj.err;
  EXPECT_EQ(nlohmann::json::parse(cj.out).at("warnings").size(), 1u);

  const auto r = run_llmport({"run", t.path().string(), "--prompt", "Once", "--n-tokens", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("config.json: torch_dtype \"float7\" is not a known dtype"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("dtype"), "fp32");  // stories260K stores F32
  const auto explicit_dtype =
      run_llmport({"run", t.path().string(), "--prompt", "Once", "--n-tokens", "2", "--dtype", "fp32"});
  ASSERT_EQ(explicit_dtype.exit_code, 0) << explicit_dtype.err;
  EXPECT_EQ(explicit_dtype.err.find("torch_dtype"), std::string::npos) << explicit_dtype.err;

  // A known torch_dtype gives no warning.
  const auto plain = run_llmport({"check", stories()});
  EXPECT_EQ(plain.err.find("torch_dtype"), std::string::npos) << plain.err;
}

}  // namespace
}  // namespace llmport::test
