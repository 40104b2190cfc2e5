// CLI usage errors: one `error: ` line plus a --help hint and exit 2 for CLI11 parse errors,
// plain range messages, MODEL reported before the prompt, exit codes in --help, and the
// warning for an unknown config.json torch_dtype.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "llmport/kernels.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;


TEST(CliParseErrors, UnknownFlagGetsErrorPrefixAndHelpHint) {
  const auto r = run_llmport({"run", stories_dir().string(), "--bogus"});
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

// A word of one dash and a flag's letter is a cluster of short flags to CLI11: `-hello`
// printed the help (the -h in it) and exited 0 instead of tokenizing the text.
TEST(CliParseErrors, AWordThatStartsWithAFlagLetterIsNotReadAsFlags) {
  const auto r = run_llmport({"tokenize", stories_dir().string(), "-hello"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "error: unknown option '-hello': put an argument that starts with '-' after '--' (see llmport "
            "tokenize --help)\n");
  const auto other = run_llmport({"tokenize", stories_dir().string(), "-world"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("unknown option '-world': put an argument that starts with '-' after '--'"),
            std::string::npos)
      << other.err;
  // After `--` it is text: the same ids as "-hello" read from stdin.
  const auto after = run_llmport({"tokenize", stories_dir().string(), "--", "-hello"});
  const auto piped = run_llmport({"tokenize", stories_dir().string()}, "-hello");
  ASSERT_EQ(after.exit_code, 0) << after.err;
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(nlohmann::json::parse(after.out), nlohmann::json::parse(piped.out));
  EXPECT_GT(nlohmann::json::parse(after.out).size(), 2u);
  // An option's value may start with '-', and -h alone is still the help.
  const auto prompt = run_llmport({"run", stories_dir().string(), "--prompt", "-hello", "-n", "1", "-t", "1"});
  EXPECT_EQ(prompt.exit_code, 0) << prompt.err;
  EXPECT_EQ(run_llmport({"tokenize", "-h"}).exit_code, 0);
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
      {{"run", stories_dir().string(), "--prompt", "hi", "--n-tokens", "0"}, "error: --n-tokens: must be >= 1, got 0"},
      {{"run", stories_dir().string(), "--prompt", "hi", "--temperature", "-1"}, "error: --temperature: must be >= 0, got -1"},
      {{"run", stories_dir().string(), "--prompt", "hi", "--top-p", "0"}, "error: --top-p: must be in (0, 1], got 0"},
      {{"run", stories_dir().string(), "--prompt", "hi", "--top-p", "1.5"}, "error: --top-p: must be in (0, 1], got 1.5"},
      {{"run", stories_dir().string(), "--prompt", "hi", "--min-p", "2"}, "error: --min-p: must be in [0, 1], got 2"},
      {{"run", stories_dir().string(), "--prompt", "hi", "--repeat-penalty", "0"}, "error: --repeat-penalty: must be > 0, got 0"},
      {{"run", stories_dir().string(), "--prompt", "hi", "--temperature", "inf"}, "error: --temperature: expects a finite number, got 'inf'"},
      {{"run", stories_dir().string(), "--prompt", "hi", "--repeat-penalty", "inf"}, "error: --repeat-penalty: expects a finite number, got 'inf'"},
      {{"run", stories_dir().string(), "--prompt", "hi", "--max-seq", "0"}, "error: --max-seq: must be >= 1, got 0"},
      {{"check", stories_dir().string(), "--max-seq", "0"}, "error: --max-seq: must be >= 1, got 0"},
      {{"verify", stories_dir().string(), "--max-seq", "-3"}, "error: --max-seq: must be >= 1, got -3"},
      {{"diagnosis", stories_dir().string(), "--max-seq", "0"}, "error: --max-seq: must be >= 1, got 0"},
      // Positions ctx/2 .. ctx-2 are scored: a chunk of 2 scores nothing.
      {{"perplexity", stories_dir().string(), "-f", "x.txt", "-c", "2"}, "error: --ctx-size: must be >= 3, got 2"},
      {{"deploy", stories_dir().string(), "--threads", "-1"}, threads_error("-1")},
      {{"deploy", stories_dir().string(), "--threads", "100000"}, threads_error("100000")},
      {{"bench", stories_dir().string(), "-t", "100000"}, threads_error("100000")},
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
  const auto ok = run_llmport({"run", stories_dir().string(), "--prompt", "hi", "--top-p", "1", "--n-tokens", "2"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const auto help = run_llmport({"run", "--help"});
  EXPECT_NE(help.out.find("--top-p FLOAT:in (0, 1]"), std::string::npos) << help.out;
}

// An empty --dtype / --quantize-lm-head is refused (it used to mean "not given": the
// checkpoint's dtype, an unquantized lm_head), on nested commands too.
TEST(CliParseErrors, AnEmptyDtypeOrLmHeadFormatIsAUsageError) {
  const std::vector<std::vector<std::string>> cases = {
      {"run", stories_dir().string(), "--prompt", "Once", "--dtype", ""},
      {"kernels", "validate", stories_dir().string(), "--dtype", "q8_0", "--quantize-lm-head", ""},
      {"check", stories_dir().string(), "--dtype", "q4_0", "--quantize-lm-head", ""},
      {"bench", stories_dir().string(), "--no-roofline", "--dtype", ""}};
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

// Every string option (not only --dtype): an empty value used to read as "not given" (no
// kernel cache, the default workspace, ...). One row per command family; main.cpp applies
// the rule to the whole command tree (option_rules.cpp).
TEST(CliParseErrors, AnEmptyValueOfAnyStringOptionIsAUsageError) {
  const std::string m = stories_dir().string();
  const std::vector<std::vector<std::string>> cases = {
      {"bench", m, "--kernel-cache", ""},        {"bench", m, "--registry", ""},
      {"bench", m, "--compare", ""},             {"bench", m, "--output", ""},
      {"run", m, "--prompt", "hi", "--registry", ""},
      {"deploy", m, "--name", ""},               {"deploy", m, "--workspace", ""},
      {"deploy", m, "--reference", ""},          {"diagnosis", m, "--svg", ""},
      {"diagnosis", m, "--out", ""},             {"perplexity", m, "--save-logits", ""},
      {"verify", m, "--report-dir", ""},         {"serve", m, "--host", ""},
      {"serve", m, "--model-name", ""},          {"synth", "--preset", ""},
      {"status", "--workspace", ""},             {"chat-template", m, "--template", ""},
      {"tokenize", m, "--jsonl", ""},            {"kernels", "validate", m, "--registry", ""},
      {"regress", "--workspace", ""}};
  for (const auto& args : cases) {
    const std::string& flag = args[args.size() - 2];
    SCOPED_TRACE(args[0] + " " + flag);
    const auto r = run_llmport(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("error: " + flag + ": empty value (see llmport " + args[0], 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
  const auto model = run_llmport({"run", "", "--prompt", "hi"});
  EXPECT_EQ(model.exit_code, 2);
  EXPECT_EQ(model.err, "error: MODEL: empty value (see llmport run --help)\n");
  // run keeps --prompt in an optional: "" is an empty prompt (BOS only), still accepted.
  const auto empty_prompt = run_llmport({"run", m, "--prompt", "", "--n-tokens", "2"});
  EXPECT_EQ(empty_prompt.exit_code, 0) << empty_prompt.err;
  // tokenize's TEXT "" is the empty text (its ids), not "not given".
  const auto empty_text = run_llmport({"tokenize", m, ""});
  EXPECT_EQ(empty_text.exit_code, 0) << empty_text.err;
  // serve's --model-name comes back in every response: invalid UTF-8 (sent back as U+FFFD)
  // or a newline is refused before the server starts.
  for (const std::string name : {"a\xff", "a\nb"}) {
    const auto r = run_llmport({"serve", m, "--model-name", name, "--port", "0"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("holds invalid UTF-8 or a control character"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;
  }
}

// A number that does not parse, and a value outside a range, read like every other error
// (not CLI11's "Could not convert: --x = abc" / "Value 70000 not in range 0 to 65535").
TEST(CliParseErrors, NumbersThatDoNotParseUseTheProjectWording) {
  const std::string m = stories_dir().string();
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"deploy", m, "--min-top1", "abc"}, "error: --min-top1: expects a finite number, got 'abc'"},
      {{"deploy", m, "--min-top1", "nan"}, "error: --min-top1: expects a finite number, got 'nan'"},
      {{"run", m, "--prompt", "hi", "--n-tokens", "1.5"}, "error: --n-tokens: expects a whole number, got '1.5'"},
      {{"run", m, "--prompt", "hi", "--top-k", "x"}, "error: --top-k: expects a whole number, got 'x'"},
      {{"run", m, "--prompt", "hi", "--seed", "-1"}, "error: --seed: expects a whole number >= 0, got '-1'"},
      {{"bench", m, "-r", "two"}, "error: --repetitions: expects a whole number, got 'two'"},
      {{"serve", m, "--port", "70000"}, "error: --port: must be in [0, 65535], got 70000"},
      {{"serve", m, "--parallel", "0"}, "error: --parallel: must be in [1, 256], got 0"},
      {{"serve", m, "--queue", "q"}, "error: --queue: expects a whole number, got 'q'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.want);
    const auto r = run_llmport(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind(c.want + " (see llmport " + c.args[0] + " --help)", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find("Could not convert"), std::string::npos) << r.err;
  }
}

// bench -t is a comma list: CLI11's delimiter silently dropped the empty element of
// "1,,2" (two runs instead of an error); each element is checked and named.
TEST(CliParseErrors, ACommaListWithAnEmptyOrBadElementIsAUsageError) {
  const std::string m = stories_dir().string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1,,2", "error: --threads: empty element 2 in '1,,2'"},
      {"1,", "error: --threads: empty element 2 in '1,'"},
      {",1", "error: --threads: empty element 1 in ',1'"},
      {"", "error: --threads: empty value"},
      {"1,x", "error: --threads: element 'x': expects a whole number, got 'x'"},
      {"1,100000", "error: --threads: element '100000': " + threads_error("100000").substr(18)},
  };
  for (const auto& [list, want] : cases) {
    SCOPED_TRACE(list);
    const auto r = run_llmport({"bench", m, "--no-roofline", "-t", list});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err, want + " (see llmport bench --help)\n");
  }
  // 0 is all cores: with the core count beside it, the same count twice (it ran twice and
  // printed a "scaling" between the two).
  const std::string cores = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  const auto dup = run_llmport({"bench", m, "--no-roofline", "-t", cores + ",0"});
  EXPECT_EQ(dup.exit_code, 2) << dup.out << dup.err;
  EXPECT_EQ(dup.err, "error: --threads: '" + cores + ",0' gives " + cores + " threads twice (0 = all " + cores +
                         " cores); give each count once\n");
  // A good list still makes one run per count.
  const auto ok = run_llmport({"bench", m, "--no-roofline", "-p", "4", "-n", "1", "-r", "1", "-t", "1,2", "-o", "json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto j = nlohmann::json::parse(ok.out);
  std::set<int> threads;
  for (const auto& row : j) threads.insert(row.at("threads").get<int>());
  EXPECT_EQ(threads, (std::set<int>{1, 2})) << ok.out;
}

TEST(CliRunArgs, MissingModelIsReportedBeforeMissingPrompt) {
  const auto r = run_llmport({"run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: MODEL is required (a model directory or org/name id)\n");
  const auto p = run_llmport({"run", stories_dir().string()});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("error: a prompt is required"), std::string::npos) << p.err;
}

// A bad local MODEL is reported before a prompt mistake (missing prompt, both --prompt and
// --prompt-ids): the model is what the user must fix first.
TEST(CliRunArgs, ABadModelIsReportedBeforeABadPrompt) {
  TempDir t;  // a directory without config.json
  const std::string missing = (t.path() / "no-such-model").string();
  const std::vector<std::vector<std::string>> prompt_mistakes = {{}, {"--prompt", "a", "--prompt-ids", "1"}};
  for (const auto& extra : prompt_mistakes) {
    std::vector<std::string> args = {"run", missing};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_llmport(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "error: model '" + missing +
                         "' not found: no such directory or file, and not a Hugging Face id org/name[@revision]\n");
    args[1] = t.path().string();
    const auto d = run_llmport(args);
    EXPECT_EQ(d.exit_code, 2);
    EXPECT_EQ(d.err, "error: " + t.path().string() + ": no config.json in this directory\n");
  }
  // An HF id that is not on disk: the prompt mistake first, no download attempted.
  const auto hub = run_llmport({"run", "org/name", "--prompt", "a", "--prompt-ids", "1"});
  EXPECT_EQ(hub.exit_code, 2);
  EXPECT_EQ(hub.err, "error: give either --prompt or --prompt-ids, not both\n");
}

// `verify DEPLOYMENT_DIR` (a workspace, not a model) says what the directory is and what to run.
TEST(CliErrors, ADeploymentDirectoryIsNamedAsOne) {
  test::TempDir t;
  test::write_file(t.path() / "deployment.json", "{}");
  const auto r = run_llmport({"verify", t.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: " + t.path().string() + ": an llmport deployment, not a model (no config.json): use `make -C " +
                       t.path().string() + " run|verify|bench`, or give its model (\"model_dir\" in deployment.json)\n");
}

TEST(CliHelp, CheckVerifyAndDiagnosisListTheirExitCodes) {
  const auto c = run_llmport({"check", "--help"});
  EXPECT_EQ(c.exit_code, 0);
  for (const char* s : {"0 ACCEPT", "3 REJECT", "2 bad input"}) EXPECT_NE(c.out.find(s), std::string::npos) << s;
  // A --scan-values FAIL (NaN/Inf, |w| > sqrt(FLT_MAX)) exits 2, and the help says so.
  EXPECT_NE(c.out.find("a --scan-values FAIL: NaN/Inf or |w| > sqrt(FLT_MAX) in a weight"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("warn on |w| >= 65520 (rounds to Inf in fp16"), std::string::npos) << c.out;
  const auto d = run_llmport({"diagnosis", "--help"});
  EXPECT_EQ(d.exit_code, 0);
  for (const char* s : {"0 nothing flagged", "1 a layer or the final norm flagged", "2 bad input", "3 architecture rejected"})
    EXPECT_NE(d.out.find(s), std::string::npos) << s;
  const auto v = run_llmport({"verify", "--help"});
  EXPECT_EQ(v.exit_code, 0);
  for (const char* s : {"0 PASS", "1 FAIL", "2 bad input", "3 architecture rejected"})
    EXPECT_NE(v.out.find(s), std::string::npos) << s;
}

TEST(CliDtype, UnknownTorchDtypeWarnsInCheckAndRun) {
  TempDir t;
  for (const auto& e : fs::directory_iterator(stories_dir().string()))
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

  // With --json there is one JSON object on stdout even without a verdict: the error and
  // the exit code, beside the usual one-line error on stderr.
  write_file(t.path() / "config.json", "{\"architectures\": [\"LlamaForCausalLM\"],");
  const auto bad = run_llmport({"check", t.path().string(), "--json"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  const auto bj = nlohmann::json::parse(bad.out);
  EXPECT_EQ(bj.at("verdict"), "ERROR");
  EXPECT_EQ(bj.at("exit_code"), 2);
  EXPECT_NE(bj.at("error").get<std::string>().find("config.json: malformed JSON"), std::string::npos) << bad.out;
  EXPECT_NE(bad.err.find("error: "), std::string::npos) << bad.err;
  const auto missing = run_llmport({"check", (t.path() / "absent").string(), "--json"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(nlohmann::json::parse(missing.out).at("verdict"), "ERROR") << missing.out;

  // An accepted architecture whose weights are damaged is no ACCEPT: with --weights the
  // verdict follows the exit code, the gate's answer stays under "architecture".
  write_file(t.path() / "config.json", read_file(fs::path(stories_dir().string()) / "config.json"));
  const std::string st = read_file(fs::path(stories_dir().string()) / "model.safetensors");
  write_file(t.path() / "model.safetensors", st.substr(0, st.size() - 4096));
  const auto dmg = run_llmport({"check", t.path().string(), "--json", "--weights"});
  EXPECT_EQ(dmg.exit_code, 2) << dmg.err;
  const auto dj = nlohmann::json::parse(dmg.out);
  EXPECT_EQ(dj.at("verdict"), "ERROR") << dmg.out;
  EXPECT_EQ(dj.at("architecture"), "ACCEPT");
  EXPECT_EQ(dj.at("exit_code"), 2);
  EXPECT_NE(dj.at("error").get<std::string>().find("model.safetensors"), std::string::npos) << dmg.out;
  write_file(t.path() / "model.safetensors", st);
  const auto good = nlohmann::json::parse(run_llmport({"check", t.path().string(), "--json", "--weights"}).out);
  EXPECT_EQ(good.at("verdict"), "ACCEPT");
  EXPECT_EQ(good.at("exit_code"), 0);
  EXPECT_FALSE(good.contains("error"));

  // A known torch_dtype gives no warning.
  const auto plain = run_llmport({"check", stories_dir().string()});
  EXPECT_EQ(plain.err.find("torch_dtype"), std::string::npos) << plain.err;
}

// Flag errors found before the command runs (CLI11's validators, unknown or misplaced
// flags, a missing MODEL, a stray word) keep check --json's promise too: one JSON object on
// stdout (it was empty), the one-line error on stderr, exit 2. Words after `--` are no flags.
TEST(CliCheck, JsonAnswersFlagErrorsFoundBeforeTheCommandRuns) {
  const std::string m = stories_dir().string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"check", m, "--json", "--max-seq", "0"}, "--max-seq"},
      {{"check", m, "--json", "--no-such-flag"}, "--no-such-flag"},
      {{"check", "--json"}, "MODEL"},
      {{"check", m, "--json", "stray"}, "stray"},
      {{"check", m, "--json", "--max-seq", "--weights"}, "--max-seq"},
  };
  for (const auto& [args, named] : cases) {
    const auto r = run_llmport(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << r.err;
    ASSERT_FALSE(r.out.empty()) << args.back() << ": no JSON on stdout; stderr " << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("verdict"), "ERROR") << r.out;
    EXPECT_EQ(j.at("exit_code"), 2) << r.out;
    EXPECT_NE(j.at("error").get<std::string>().find(named), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "error: " + j.at("error").get<std::string>() + "\n");
  }
  // Without --json, nothing on stdout.
  const auto plain = run_llmport({"check", m, "--max-seq", "0"});
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_EQ(plain.out, "");
  const auto operand = run_llmport({"check", m, "--", "--json"});
  EXPECT_EQ(operand.exit_code, 2);
  EXPECT_EQ(operand.out, "") << "a --json after -- is an operand, not the flag";
}

// An ACCEPT of a config with no weights beside it says that only the architecture was
// judged; a weights file that is a link to nothing is damage (exit 2 naming the link),
// not "no model.safetensors ... (found model.safetensors)".
TEST(CliCheck, ConfigAloneIsArchitectureOnlyAndADanglingWeightsLinkIsDamage) {
  TempDir t;
  write_file(t.path() / "config.json", read_file(fs::path(stories_dir().string()) / "config.json"));
  const auto c = run_llmport({"check", t.path().string(), "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const auto notes = nlohmann::json::parse(c.out).at("notes");
  ASSERT_EQ(notes.size(), 1u) << c.out;
  EXPECT_NE(notes[0].get<std::string>().find("only the architecture was checked"), std::string::npos) << c.out;
  const auto with_weights = run_llmport({"check", stories_dir().string(), "--json"});
  EXPECT_EQ(with_weights.out.find("only the architecture"), std::string::npos) << with_weights.out;

  fs::create_symlink(t.path() / "blobs" / "gone", t.path() / "model.safetensors");
  for (const bool weights : {false, true}) {
    std::vector<std::string> args = {"check", t.path().string()};
    if (weights) args.push_back("--weights");
    const auto d = run_llmport(args);
    EXPECT_EQ(d.exit_code, 2) << d.out << d.err;
    EXPECT_NE(d.err.find("model.safetensors: is a symbolic link to "), std::string::npos) << d.err;
    EXPECT_EQ(d.err.find("found model.safetensors"), std::string::npos) << d.err;
  }
}

}  // namespace
// Whole numbers are read exactly (std::from_chars): past int64/uint64 is "out of range"
// (2^64 is not clamped to 2^64-1, which strtod would make the same double); past the
// option's own type (int) main.cpp words CLI11's conversion error the same way; never
// "Could not convert".
TEST(CliParseErrors, WholeNumbersTooBigForTheirTypeAreOutOfRange) {
  const std::string m = stories_dir().string();
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"run", m, "--prompt", "hi", "--n-tokens", "99999999999999999999"},
       "error: --n-tokens: 99999999999999999999 is out of range"},
      {{"run", m, "--prompt", "hi", "-n", "2147483648"},
       "error: --n-tokens: 2147483648 is out of range"},
      {{"run", m, "--prompt", "hi", "--max-seq", "2147483648"},
       "error: --max-seq: 2147483648 is out of range"},
      {{"run", m, "--prompt", "hi", "--top-k", "99999999999999999999"},
       "error: --top-k: 99999999999999999999 is out of range"},
      {{"run", m, "--prompt", "hi", "--seed", "18446744073709551616"},
       "error: --seed: 18446744073709551616 is out of range"},
      {{"bench", m, "-n", "99999999999999999999"}, "error: --n-gen: 99999999999999999999 is out of range"},
      {{"bench", m, "-r", "99999999999999999999"}, "error: --repetitions: 99999999999999999999 is out of range"},
      {{"perplexity", m, "-c", "99999999999999999999"}, "error: --ctx-size: 99999999999999999999 is out of range"},
      {{"kernels", "validate", m, "--prefill-m", "99999999999999999999"},
       "error: --prefill-m: 99999999999999999999 is out of range"},
      // A ranged int option: a non-number is "not a whole number" (not "finite number"),
      // and " 5" / "0x10" / "5 " are refused like any other non-digit text.
      {{"run", m, "--prompt", "hi", "--max-seq", ""}, "error: --max-seq: expects a whole number, got ''"},
      {{"run", m, "--prompt", "hi", "--max-seq", "5 "}, "error: --max-seq: expects a whole number, got '5 '"},
      {{"run", m, "--prompt", "hi", "--max-seq", " 5"}, "error: --max-seq: expects a whole number, got ' 5'"},
      {{"run", m, "--prompt", "hi", "--max-seq", "0x10"}, "error: --max-seq: expects a whole number, got '0x10'"},
      {{"run", m, "--prompt", "hi", "--max-seq", "0b11"}, "error: --max-seq: expects a whole number, got '0b11'"},
      {{"run", m, "--prompt", "hi", "--n-tokens", "1,x"}, "error: --n-tokens: expects a whole number, got '1,x'"},
      {{"run", m, "--prompt", "hi", "--top-k", "x"}, "error: --top-k: expects a whole number, got 'x'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.want);
    const auto r = run_llmport(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind(c.want + " (see llmport " + c.args[0], 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
  // 2^64-1 itself is a seed (the largest); it is not refused.
  const auto top = run_llmport({"run", m, "--prompt", "hi", "-n", "2", "--seed", "18446744073709551615"});
  EXPECT_EQ(top.exit_code, 0) << top.err;
}

// " " is as much "not given" as "": refused with the same exemptions as "".
TEST(CliParseErrors, AWhitespaceOnlyValueIsRefusedLikeAnEmptyOne) {
  const std::string m = stories_dir().string();
  const std::vector<std::vector<std::string>> cases = {
      {"deploy", m, "--name", " "},        {"serve", m, "--api-key", " "},
      {"bench", m, "--kernel-cache", " "}, {"bench", m, "--registry", "\t"},
      {"diagnosis", m, "--out", "  "}};
  for (const auto& args : cases) {
    const std::string& flag = args[args.size() - 2];
    SCOPED_TRACE(args[0] + " " + flag);
    const auto r = run_llmport(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("error: " + flag + ": whitespace-only value (see llmport " + args[0], 0), 0u) << r.err;
  }
  const auto prompt = run_llmport({"run", m, "--prompt", " ", "--n-tokens", "2"});
  EXPECT_EQ(prompt.exit_code, 0) << prompt.err;
  const auto text = run_llmport({"tokenize", m, " "});
  EXPECT_EQ(text.exit_code, 0) << text.err;
}

// --prompt-ids takes the JSON array detokenize and tokenize --json print, as the same ids
// the comma list gives.
TEST(CliParseErrors, PromptIdsTakeAJsonArrayAsTheSameIds) {
  const std::string m = stories_dir().string();
  const auto list = run_llmport({"run", m, "--prompt-ids", "1,403,407", "-n", "4", "--json"});
  const auto array = run_llmport({"run", m, "--prompt-ids", " [1, 403, 407]", "-n", "4", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  ASSERT_EQ(array.exit_code, 0) << array.err;
  const auto a = nlohmann::json::parse(list.out), b = nlohmann::json::parse(array.out);
  EXPECT_EQ(a.at("prompt_ids"), nlohmann::json({1, 403, 407}));
  EXPECT_EQ(b.at("prompt_ids"), a.at("prompt_ids"));
  EXPECT_EQ(b.at("generated_ids"), a.at("generated_ids"));
  EXPECT_EQ(a.at("generated_ids").size(), 4u);
}

// Every comma list of whole numbers (token ids, thread counts) follows one rule: each
// element a whole number (no "1e0"; blanks around it ignored), no empty or blank element,
// the flag and the element named.
TEST(CliParseErrors, EveryCommaListOfNumbersFollowsOneRule) {
  const std::string m = stories_dir().string();
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"bench", m, "--no-roofline", "-t", "1e0"}, "error: --threads: expects a whole number, got '1e0'"},
      {{"bench", m, "--no-roofline", "-t", "1, ,2"}, "error: --threads: empty element 2 in '1, ,2'"},
      {{"detokenize", m, "1,,2"}, "error: IDS: empty element 2 in '1,,2'"},
      {{"detokenize", m, "1, 2x"}, "error: IDS: element '2x': expects a token id (a whole number >= 0), got '2x'"},
      {{"detokenize", m, "1", "2,99999999"}, "error: IDS: element 2: token id 99999999 is out of range (vocab size "},
      {{"detokenize", m, "[1, true]"}, "error: IDS: element 2 (true) is not a token id (an integer in [0, 2147483647])"},
      {{"detokenize", m, "1", "99999999"}, "error: IDS: token id 99999999 is out of range (vocab size "},
      {{"run", m, "--prompt-ids", "[1, true]"},
       "error: --prompt-ids: element 2 (true) is not a token id (an integer in [0, 2147483647])"},
      {{"run", m, "--prompt-ids", "[1,"}, "error: --prompt-ids: '[1,' is not a JSON array of token ids"},
      {{"run", m, "--prompt-ids", "[]"}, "error: --prompt-ids: no token ids in '[]' (at least one is needed)"},
      {{"diagnosis", m, "--prompt", "[-1]", "--prompt-ids"},
       "error: --prompt-ids: element 1 (-1) is not a token id (an integer in [0, 2147483647])"},
      {{"diagnosis", m, "--prompt", "1,,2", "--prompt-ids"}, "error: --prompt-ids: empty element 2 in '1,,2'"},
      {{"diagnosis", m, "--prompt", "1,2e0", "--prompt-ids"},
       "error: --prompt-ids: element '2e0': expects a token id (a whole number >= 0), got '2e0'"},
      {{"run", m, "--prompt-ids", "1,,2"}, "error: --prompt-ids: empty element 2 in '1,,2'"},
      {{"run", m, "--prompt-ids", "1,4294967301"},
       "error: --prompt-ids: element '4294967301': token id 4294967301 is out of range (0..2147483647)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.want);
    const auto r = run_llmport(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind(c.want, 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_EQ(r.out, "") << "nothing on stdout before the error";
  }
  // The JSON array form of detokenize keeps JSON's spacing.
  const auto json = run_llmport({"detokenize", m, "[1, 2]"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out, run_llmport({"detokenize", m, "1,2"}).out);
  const auto spaced = run_llmport({"detokenize", m, "1, 2"});  // as Python prints a list
  EXPECT_EQ(spaced.exit_code, 0) << spaced.err;
  EXPECT_EQ(spaced.out, json.out);
}

// A hidden option (--inject-fault) and a golden: with no file used to print "error: : ...".
TEST(CliParseErrors, EveryMessageNamesItsOption) {
  const std::string m = stories_dir().string();
  const auto fault = run_llmport({"diagnosis", m, "--inject-fault", ""});
  EXPECT_EQ(fault.exit_code, 2);
  EXPECT_EQ(fault.err, "error: --inject-fault: empty value (see llmport diagnosis --help)\n");
  const auto golden = run_llmport({"diagnosis", m, "--reference", "golden:"});
  EXPECT_EQ(golden.exit_code, 2);
  EXPECT_EQ(golden.err, "error: --reference golden:FILE: FILE is empty\n");
}

// Library text never reaches the user: a filesystem_error is reworded with its path and
// reason; a directory given as a template file is refused naming it.
TEST(CliParseErrors, FilesystemErrorsAndDirectoriesUseTheProjectWording) {
  TempDir t;
  const fs::path file = t.path() / "a_file";
  write_file(file, "x");
  const auto synth = run_llmport({"synth", "--preset", "tiny-llama", "-o", (file / "sub").string()});
  EXPECT_EQ(synth.exit_code, 2) << synth.out << synth.err;
  EXPECT_EQ(synth.err, "error: " + (file / "sub").string() + ": cannot create directory (Not a directory)\n");
  const fs::path dangling = t.path() / "dangling";
  fs::create_symlink(t.path() / "missing" / "dir", dangling);
  const auto link = run_llmport({"synth", "--preset", "tiny-llama", "-o", dangling.string()});
  EXPECT_EQ(link.exit_code, 2) << link.out << link.err;
  EXPECT_EQ(link.err, "error: " + dangling.string() + ": cannot create directory (File exists)\n");
  const auto tmpl = run_llmport({"chat-template", stories_dir().string(), "--messages", file.string(), "--template",
                                 t.path().string()});
  EXPECT_EQ(tmpl.exit_code, 2) << tmpl.out << tmpl.err;
  EXPECT_EQ(tmpl.err, "error: --template " + t.path().string() + ": is a directory, expected a file\n");
}

}  // namespace llmport::test
