// How the command line is read and refused: `--` and `--model` before positional words,
// one wording for repeated options, flags given a value and numbers past their type, one
// comma-list rule for bench -p, fault values, and usage mistakes found before any work
// (bench --kernel-cache, chat-template --template, a directory in a model file's place).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "support/test_support.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;


// The ids of "hello" in stories260K's tokenizer (tokenize prints [1, 281, 306, 414]).
const std::vector<std::string> kHelloIds = {"281", "306", "414"};

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A model directory whose files are links to stories260K's, except `replaced`, which is a
// directory (or absent when `as_dir` is false).
fs::path stories_without(const fs::path& dst, const std::string& replaced, bool as_dir = true) {
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(stories_dir().string()))
    if (e.is_regular_file() && e.path().filename() != replaced)
      fs::create_symlink(e.path(), dst / e.path().filename());
  if (as_dir) fs::create_directories(dst / replaced);
  return dst;
}

void expect_usage_error_no_output(const RunResult& r, const std::string& want) {
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, want);
  EXPECT_EQ(r.out, "");
}

TEST(CliPositionals, DetokenizeTakesIdsAfterDashDashAndAfterModelOption) {
  const std::string m = stories_dir().string();
  for (const auto& args : {cat({"detokenize", m, "--"}, kHelloIds), cat({"detokenize", "--model", m}, kHelloIds),
                           cat({"detokenize", "--model", m, "--"}, kHelloIds),
                           cat({"detokenize", "--", m}, kHelloIds),
                           std::vector<std::string>{"detokenize", m, "281", "--", "306", "414"},
                           std::vector<std::string>{"detokenize", m, "281,306", "--skip-special", "414"}}) {
    const auto r = run_llmport(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "hello\n") << args.size();
  }
  // The JSON array form is still read whole after `--` (not split by CLI11).
  const auto json = run_llmport({"detokenize", m, "--", "[281, 306, 414]"});
  EXPECT_EQ(json.out, "hello\n") << json.err;
  expect_usage_error_no_output(run_llmport({"detokenize", m, "--", "[281,,306]"}),
                     "error: IDS: '[281,,306]' is not a JSON array of token ids\n");
  // MODEL and --model together are still refused.
  const auto both = run_llmport({"detokenize", m, "--model", m, "281"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_EQ(both.err,
            "error: MODEL and --model cannot be given together: give one of them (see llmport detokenize --help)\n");
}

TEST(CliPositionals, TokenizeTakesTextAfterDashDashAndAfterModelOption) {
  const std::string m = stories_dir().string();
  for (const auto& args : {std::vector<std::string>{"tokenize", m, "--", "hello"},
                           std::vector<std::string>{"tokenize", "--model", m, "hello"},
                           std::vector<std::string>{"tokenize", "--model", m, "--", "hello"}}) {
    const auto r = run_llmport(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "[1,281,306,414]\n");
  }
}

// No ids at all is refused (ids on stdin are not read); an explicit empty array decodes to "".
TEST(CliPositionals, DetokenizeWithoutIdsIsRefused) {
  const std::string m = stories_dir().string();
  expect_usage_error_no_output(run_llmport({"detokenize", m}),
                     "error: detokenize: no token ids given (IDS after MODEL: 1 2 3, 1,2,3 or \"[1, 2, 3]\"; or --jsonl FILE)\n");
  const auto empty = run_llmport({"detokenize", m, "[]"});
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(empty.out, "\n");
}

// Words after `--` that no positional takes are refused naming them, for every command.
TEST(CliPositionals, WordsNoCommandTakesAreRefusedNamingThem) {
  const std::string m = stories_dir().string();
  expect_usage_error_no_output(run_llmport({"run", m, "--prompt", "hi", "--", "x"}),
                     "error: unexpected argument 'x' (see llmport run --help)\n");
  expect_usage_error_no_output(run_llmport({"tokenize", m, "hi", "--", "x", "y"}),
                     "error: unexpected arguments 'x y' (see llmport tokenize --help)\n");
}

// CLI11's "The following argument was not expected" in the project's words.
TEST(CliParseErrors, UnknownOptionsAndExtraWordsAreNamedInTheProjectsWords) {
  const std::string m = stories_dir().string();
  expect_usage_error_no_output(run_llmport({"run", m, "--bogus"}), "error: unknown option '--bogus' (see llmport run --help)\n");
  expect_usage_error_no_output(run_llmport({"run", m, "--bogus=3", "--prompt", "hi"}),
                     "error: unknown option '--bogus' (see llmport run --help)\n");
  expect_usage_error_no_output(run_llmport({"check", m, "extra"}), "error: unexpected argument 'extra' (see llmport check --help)\n");
  expect_usage_error_no_output(run_llmport({"check", m, "a", "b"}), "error: unexpected arguments 'a b' (see llmport check --help)\n");
  expect_usage_error_no_output(run_llmport({"run", "--", m, "--prompt", "hi", "-n", "2"}),
                     "error: unexpected arguments '--prompt hi -n 2' (see llmport run --help)\n");
}

TEST(CliParseErrors, AnUnknownSubcommandOfACommandIsNamed) {
  expect_usage_error_no_output(run_llmport({"kernels", "bogus"}),
                     "error: unknown kernels subcommand 'bogus' (expected list, validate, sweep, probe; see llmport "
                     "kernels --help)\n");
}

TEST(CliParseErrors, ARepeatedOptionIsNamedInTheProjectsWords) {
  const std::string m = stories_dir().string();
  expect_usage_error_no_output(run_llmport({"run", m, "--prompt", "hi", "--seed", "1", "--seed", "2"}),
                     "error: --seed: given 2 times; it takes one value, give it once (see llmport run --help)\n");
  expect_usage_error_no_output(run_llmport({"bench", m, "-n", "1", "--n-gen", "2"}),
                     "error: --n-gen: given 2 times; it takes one value, give it once (see llmport bench --help)\n");
  expect_usage_error_no_output(run_llmport({"run", "--model", m, "--model", m, "--prompt", "hi"}),
                     "error: --model: given 2 times; it takes one value, give it once (see llmport run --help)\n");
}

// A flag given a value it cannot take says it is a flag; a number past its option's type
// says "out of range" in the same words as one past int64.
TEST(CliParseErrors, AFlagsValueAndANumberPastItsTypeUseOneWording) {
  const std::string m = stories_dir().string();
  expect_usage_error_no_output(run_llmport({"run", m, "--prompt", "hi", "--json=maybe"}),
                     "error: --json: a flag takes no value (or true/false), got 'maybe' (see llmport run --help)\n");
  expect_usage_error_no_output(run_llmport({"check", m, "--json=maybe"}),
                     "error: --json: a flag takes no value (or true/false), got 'maybe' (see llmport check --help)\n");
  expect_usage_error_no_output(run_llmport({"run", m, "--prompt", "hi", "-n", "2147483648"}),
                     "error: --n-tokens: 2147483648 is out of range (see llmport run --help)\n");
  expect_usage_error_no_output(run_llmport({"run", m, "--prompt", "hi", "-n", "99999999999999999999"}),
                     "error: --n-tokens: 99999999999999999999 is out of range (see llmport run --help)\n");
  // The flag's own true/false spellings still work.
  const auto off = run_llmport({"run", m, "--prompt", "hi", "-n", "1", "--json=false"});
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.out.find('{'), std::string::npos) << off.out;
}

// bench -p follows the comma-list rule of -t and --prompt-ids, refused while parsing
// (before the model or the roofline).
TEST(CliParseErrors, BenchPromptLengthsFollowTheCommaListRule) {
  const std::string m = stories_dir().string();
  struct Case {
    std::string p, want;
  };
  for (const Case& c : std::vector<Case>{
           {"1,,2", "--n-prompt: empty element 2 in '1,,2'"},
           {"1,", "--n-prompt: empty element 2 in '1,'"},
           {"1, ,2", "--n-prompt: empty element 2 in '1, ,2'"},
           {"1,x", "--n-prompt: element 'x': expects a whole number, got 'x'"},
           {"1e3", "--n-prompt: expects a whole number, got '1e3'"},
           {"1,2000000", "--n-prompt: element '2000000': must be a whole number from 0 to 1048576, got 2000000"},
       }) {
    SCOPED_TRACE(c.p);
    expect_usage_error_no_output(run_llmport({"bench", m, "-p", c.p}), "error: " + c.want + " (see llmport bench --help)\n");
  }
  // The same list given to -t is refused in the same words.
  expect_usage_error_no_output(run_llmport({"bench", m, "-t", "1,,2"}),
                     "error: --threads: empty element 2 in '1,,2' (see llmport bench --help)\n");
  // 0 (no prefill test) is still a length: with -n 0 nothing is left to measure.
  expect_usage_error_no_output(run_llmport({"bench", m, "-p", "0", "-n", "0"}),
                     "error: nothing to measure: -p/--n-prompt and -n/--n-gen are both 0\n");
}

// A fault value that overflows fp32 (or is inf, or below its normal range) would plant
// inf/NaN or zero instead of the asked-for scaling: a usage error naming fault and value.
TEST(CliParseErrors, AnInjectedFaultValueMustFitFloat) {
  const std::string m = stories_dir().string();
  const std::string range = fmt::format("(a positive number from {:g} to {:g})", std::numeric_limits<float>::min(),
                                        std::numeric_limits<float>::max());
  ASSERT_EQ(range, "(a positive number from 1.17549e-38 to 3.40282e+38)");
  for (const std::string v : {"1e999", "inf", "1e39", "1e-50"}) {
    SCOPED_TRACE(v);
    expect_usage_error_no_output(run_llmport({"run", m, "--prompt", "hi", "-n", "1", "--inject-fault", "logit_scale=" + v}),
                       "error: fault 'logit_scale=" + v + "': value '" + v + "' is out of range " + range + "\n");
  }
  expect_usage_error_no_output(run_llmport({"verify", m, "--quick", "--inject-fault", "proj_scale@0=1e999"}),
                     "error: fault 'proj_scale@0=1e999': value '1e999' is out of range " + range + "\n");
  // A small value inside float's normal range is a value (the logits shrink; greedy still picks).
  const auto ok = run_llmport({"run", m, "--prompt", "hi", "-n", "1", "--inject-fault", "logit_scale=1e-30"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// --kernel-cache naming a file is reported before anything is measured or loaded: here
// the model has no weights file, so a check made only when the engine is built (after the
// roofline and opening the weights) would report the missing weights instead.
TEST(CliParseErrors, BenchKernelCacheFileIsReportedBeforeAnyMeasurement) {
  TempDir t;
  const fs::path model = stories_without(t.path() / "m", "model.safetensors", /*as_dir=*/false);
  const fs::path file = t.path() / "cache_file";
  write_file(file, "x");
  expect_usage_error_no_output(run_llmport({"bench", model.string(), "--no-roofline", "-p", "0", "-n", "1", "-r", "1",
                                  "--kernel-cache", file.string()}),
                     "error: --kernel-cache " + file.string() +
                         ": is not a directory (expected the packed-weight cache directory)\n");
  EXPECT_EQ(read_file(file), "x");
}

// chat-template refuses a template file with no template text as serve's
// --chat-template-file does (not "the tokenizer has no chat_template", not an empty render).
TEST(CliParseErrors, ChatTemplateRefusesAnEmptyTemplateFile) {
  TempDir t;
  const fs::path messages = t.path() / "messages.json";
  write_file(messages, R"([{"role": "user", "content": "hi"}])");
  for (const std::string text : {"", " \n\t\r\n"}) {
    const fs::path tmpl = t.path() / "template.jinja";
    write_file(tmpl, text);
    expect_usage_error_no_output(run_llmport({"chat-template", stories_dir().string(), "--messages", messages.string(), "--template",
                                    tmpl.string()}),
                       "error: --template " + tmpl.string() + ": empty file (expected a Jinja chat template)\n");
  }
  const fs::path tmpl = t.path() / "ok.jinja";
  write_file(tmpl, "{% for m in messages %}[{{ m.content }}]{% endfor %}");
  const auto ok = run_llmport({"chat-template", stories_dir().string(), "--messages", messages.string(), "--template", tmpl.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "[hi]");
}

// A directory in place of tokenizer.json or config.json is named as one, not as missing.
TEST(CliParseErrors, ADirectoryInPlaceOfAModelFileIsNamedAsADirectory) {
  TempDir t;
  const fs::path no_tok = stories_without(t.path() / "tok", "tokenizer.json");
  const std::string tok_err = "error: " + (no_tok / "tokenizer.json").string() +
                              ": is a directory, expected the tokenizer.json file\n";
  expect_usage_error_no_output(run_llmport({"tokenize", no_tok.string(), "hi"}), tok_err);
  expect_usage_error_no_output(run_llmport({"detokenize", no_tok.string(), "281"}), tok_err);
  expect_usage_error_no_output(run_llmport({"run", no_tok.string(), "--prompt", "hi", "-n", "1"}), tok_err);
  // Not taken for a model without a tokenizer (which would run on prompt ids).
  expect_usage_error_no_output(run_llmport({"run", no_tok.string(), "--prompt-ids", "1", "-n", "1"}), tok_err);
  const fs::path no_cfg = stories_without(t.path() / "cfg", "config.json");
  const std::string cfg_err = "error: " + (no_cfg / "config.json").string() +
                              ": is a directory, expected the config.json file\n";
  expect_usage_error_no_output(run_llmport({"check", no_cfg.string()}), cfg_err);
  expect_usage_error_no_output(run_llmport({"run", no_cfg.string(), "--prompt", "hi", "-n", "1"}), cfg_err);
}

// A config.json that exists but is no file (a FIFO, a link to nothing, a link loop) is
// named for what it is; "no config.json in this directory" would send the user looking
// for a file that is there. The FIFO must not be opened (that would block).
TEST(CliParseErrors, AConfigJsonThatIsNoFileIsNamed) {
  TempDir t;
  fs::create_directories(t.path() / "fifo");
  ASSERT_EQ(::mkfifo((t.path() / "fifo" / "config.json").c_str(), 0644), 0);
  fs::create_directories(t.path() / "dangling");
  fs::create_symlink(t.path() / "nowhere", t.path() / "dangling" / "config.json");
  fs::create_directories(t.path() / "loop");
  fs::create_symlink("config.json", t.path() / "loop" / "config.json");
  const std::pair<const char*, const char*> cases[] = {
      {"fifo", ": is not a regular file (a FIFO, socket or device), expected the config.json file\n"},
      {"dangling", ": is a symbolic link that resolves to nothing (No such file or directory), expected the config.json file\n"},
      {"loop", ": is a symbolic link that resolves to nothing (Too many levels of symbolic links), expected the config.json file\n"}};
  for (const auto& [dir, says] : cases) {
    const fs::path f = t.path() / dir / "config.json";
    expect_usage_error_no_output(run_llmport({"check", (t.path() / dir).string()}), "error: " + f.string() + says);
  }
  // The optional generation_config.json likewise: there but unreadable is bad input, not absent.
  const fs::path gen_dir = stories_without(t.path() / "gen", "generation_config.json");
  const std::string gen_err = "error: " + (gen_dir / "generation_config.json").string() +
                              ": is not a readable file (a directory, a link to nothing or a special file); remove it "
                              "or restore the file\n";
  expect_usage_error_no_output(run_llmport({"check", gen_dir.string()}), gen_err);
  fs::remove(gen_dir / "generation_config.json");
  fs::create_symlink(t.path() / "nowhere", gen_dir / "generation_config.json");
  expect_usage_error_no_output(run_llmport({"check", gen_dir.string()}), gen_err);
  fs::remove(gen_dir / "generation_config.json");
  EXPECT_EQ(run_llmport({"check", gen_dir.string()}).exit_code, 0);  // absent is fine
}

}  // namespace
}  // namespace llmport::test
