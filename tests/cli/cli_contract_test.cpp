// The CLI's input contract on cases that used to slip past it: ids before --model, a hidden
// option without its value, a subcommand's option before the subcommand, an output file in
// a missing directory, a weights or tokenizer file given as MODEL, a --var given twice,
// exclusive verify depths, repeated bench list elements, a command's missing subcommand, a
// truncated model.safetensors under `check`, and one wording for unparsable JSON. Each case
// runs the real binary and asserts the exit code and the exact one-line message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;


// dir/m with stories260K's files except `left_out` (the test writes its own version).
fs::path stories_copy_without(const TempDir& t, const std::string& left_out) {
  const fs::path dir = t.path() / "m";
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "model.safetensors"})
    if (f != left_out) fs::copy_file(fs::path(stories_dir().string()) / f, dir / f);
  return dir;
}

void expect_usage_error(const RunResult& r, const std::string& want) {
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, want);
}

// `detokenize 281 306 414 --model M` decodes like `detokenize --model M 281 306 414`
// (CLI11 gave 281 to the positional MODEL and then refused "MODEL excludes --model").
TEST(CliContract, DetokenizeIdsMayComeBeforeModelOption) {
  const std::string m = stories_dir().string();
  for (const auto& args : {std::vector<std::string>{"detokenize", "281", "306", "414", "--model", m},
                           std::vector<std::string>{"detokenize", "281", "--model", m, "306", "414"},
                           std::vector<std::string>{"detokenize", "281,306", "--model", m, "--", "414"}}) {
    const auto r = run_llmport(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "hello\n") << args[1];
  }
  // A model path before --model is still a second MODEL, in the project's words.
  expect_usage_error(run_llmport({"detokenize", m, "--model", m, "281"}),
                     "error: MODEL and --model cannot be given together: give one of them (see llmport "
                     "detokenize --help)\n");
}

// A hidden option given without its value is named, in the wording of any other option.
TEST(CliContract, AnOptionWithoutItsValueIsNamedHiddenOrNot) {
  const std::string m = stories_dir().string();
  expect_usage_error(run_llmport({"run", m, "--inject-fault"}),
                     "error: --inject-fault: expected a value (TEXT) (see llmport run --help)\n");
  expect_usage_error(run_llmport({"verify", m, "--kernel-configs"}),
                     "error: --kernel-configs: expected a value (TEXT) (see llmport verify --help)\n");
  expect_usage_error(run_llmport({"run", m, "--registry"}),
                     "error: --registry: expected a value (TEXT) (see llmport run --help)\n");
  expect_usage_error(run_llmport({"run", m, "--n-tokens"}),
                     "error: --n-tokens: expected a value (INT:>= 1) (see llmport run --help)\n");
}

// `llmport --json run M`: --json belongs to `run`; CLI11 called it an unexpected argument of run.
TEST(CliContract, ASubcommandsOptionBeforeTheSubcommandIsNamedAsSuch) {
  const std::string m = stories_dir().string();
  expect_usage_error(run_llmport({"--json", "check", m}),
                     "error: --json is an option of 'check': put it after the subcommand (see llmport --help)\n");
  expect_usage_error(run_llmport({"--dtype=fp32", "run", m}),
                     "error: --dtype is an option of 'run': put it after the subcommand (see llmport --help)\n");
  expect_usage_error(run_llmport({"--bogus", "run", m}),
                     "error: unknown option '--bogus' before the subcommand 'run' (see llmport --help)\n");
  // With its value as a separate word (the value is not taken for the subcommand).
  expect_usage_error(run_llmport({"--n-tokens", "3", "run", m}),
                     "error: --n-tokens is an option of 'run': put it after the subcommand (see llmport --help)\n");
  expect_usage_error(run_llmport({"-t", "2", "bench", m}),
                     "error: -t is an option of 'bench': put it after the subcommand (see llmport --help)\n");
  const auto version = run_llmport({"--version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
}

// An output FILE in a directory that does not exist is refused before any work, and no
// directory is made (write_output_file used to create the whole tree).
TEST(CliContract, AnOutputFileInAMissingDirectoryIsRefused) {
  TempDir t;
  const fs::path svg = t.path() / "no" / "such" / "x.svg";
  expect_usage_error(run_llmport({"diagnosis", stories_dir().string(), "--prompt", "Once", "--svg", svg.string()}),
                     "error: --svg " + svg.string() + ": directory " + svg.parent_path().string() +
                         " does not exist\n");
  EXPECT_FALSE(fs::exists(t.path() / "no"));
  const fs::path text = t.path() / "text.txt";
  write_file(text, "Once upon a time there was a little girl. She liked to play in the park with her friends.");
  const fs::path logits = t.path() / "gone" / "l.bin";
  expect_usage_error(run_llmport({"perplexity", stories_dir().string(), "-f", text.string(), "-c", "8", "--save-logits",
                                  logits.string()}),
                     "error: --save-logits " + logits.string() + ": directory " + logits.parent_path().string() +
                         " does not exist\n");
  EXPECT_FALSE(fs::exists(t.path() / "gone"));
  // A file in place of the directory is named too.
  const fs::path under_file = text / "x.svg";
  expect_usage_error(run_llmport({"diagnosis", stories_dir().string(), "--prompt", "Once", "--svg", under_file.string()}),
                     "error: --svg " + under_file.string() + ": " + text.string() + " is not a directory\n");
}

// A weights or tokenizer file as MODEL is named as what it is, for every command (they all
// resolve MODEL through resolve_model): check gave a REJECT (exit 3) for tokenizer.json and
// run a JSON syntax error for model.safetensors.
TEST(CliContract, AFileThatIsNotAConfigAsModelIsBadInputNamingIt) {
  const std::string m = stories_dir().string();
  const std::string st = m + "/model.safetensors", tok = m + "/tokenizer.json";
  auto want = [&](const std::string& file, const std::string& what) {
    return "error: " + file + ": " + what + "; MODEL must be a model directory or its config.json (give its directory: " +
           m + ")\n";
  };
  expect_usage_error(run_llmport({"check", tok}), want(tok, "is tokenizer.json, not the model's config"));
  expect_usage_error(run_llmport({"run", st, "--prompt", "hi"}), want(st, "is a safetensors weights file"));
  for (const auto& args : {std::vector<std::string>{"check", st}, std::vector<std::string>{"verify", st},
                           std::vector<std::string>{"bench", st, "--no-roofline"},
                           std::vector<std::string>{"diagnosis", st, "--prompt", "hi"},
                           std::vector<std::string>{"kernels", "validate", st}}) {
    SCOPED_TRACE(args[0]);
    expect_usage_error(run_llmport(args), want(st, "is a safetensors weights file"));
  }
  expect_usage_error(run_llmport({"check", m + "/README.md"}), want(m + "/README.md", "is not a config .json file"));
  // A link is judged by what it points at, and the directory named is the model's.
  TempDir links;
  const fs::path link = links.path() / "tok_link";
  fs::create_symlink(fs::absolute(tok), link);
  const std::string target = fs::canonical(link).string();
  expect_usage_error(run_llmport({"check", link.string()}),
                     "error: " + link.string() + " (a link to " + target +
                         "): is tokenizer.json, not the model's config; MODEL must be a model directory or its "
                         "config.json (give its directory: " + fs::path(target).parent_path().string() + ")\n");
  // What MODEL may be still works: config.json, a config under another name, tokenizer.json
  // for tokenize.
  EXPECT_EQ(run_llmport({"check", m + "/config.json"}).exit_code, 0);
  EXPECT_EQ(run_llmport({"check", shared_path("configs/llama-3.1-8b.json").string()}).exit_code, 0);
  const auto t = run_llmport({"tokenize", tok, "hello"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.out, "[1,281,306,414]\n");
}

// --var NAME twice was last-wins.
TEST(CliContract, ATemplateVariableGivenTwiceIsRefused) {
  TempDir t;
  const fs::path messages = t.path() / "messages.json", tmpl = t.path() / "t.jinja";
  write_file(messages, R"([{"role": "user", "content": "hi"}])");
  write_file(tmpl, "{{ x }}");
  const std::vector<std::string> base = {"chat-template", stories_dir().string(), "--messages", messages.string(),
                                         "--template", tmpl.string()};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  expect_usage_error(run_llmport(with({"--var", "x=1", "--var", "x=2"})),
                     "error: --var x: given twice; give each variable once\n");
  const auto one = run_llmport(with({"--var", "x=1", "--var", "y=2"}));
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "1");
  // A name no template can read ("x " beside x) was accepted and silently unused.
  for (const std::string spec : {"x =2", " x=2", "1x=2", "x-y=2"})
    expect_usage_error(run_llmport(with({"--var", "x=1", "--var", spec})),
                       "error: --var " + spec + ": '" + spec.substr(0, spec.find('=')) +
                           "' is not a variable name (letters, digits and _, not first a digit)\n");
  EXPECT_EQ(run_llmport(with({"--var", "_x1=2", "--var", "x=3"})).out, "3");
}

TEST(CliContract, VerifyDepthsExcludeEachOther) {
  for (const auto& args : {std::vector<std::string>{"verify", stories_dir().string(), "--quick", "--full"},
                           std::vector<std::string>{"verify", stories_dir().string(), "--full", "--quick"}}) {
    const auto r = run_llmport(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_TRUE(r.err == "error: --quick and --full cannot be given together: give one of them (see llmport verify "
                         "--help)\n" ||
                r.err == "error: --full and --quick cannot be given together: give one of them (see llmport verify "
                         "--help)\n")
        << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// Each element of bench's -t / -p lists is one run: a repeat is refused, not run twice.
TEST(CliContract, BenchListsRefuseARepeatedElement) {
  const std::string m = stories_dir().string();
  expect_usage_error(run_llmport({"bench", m, "-t", "1,1"}),
                     "error: --threads: 1 given twice in '1,1'; give each once (see llmport bench --help)\n");
  expect_usage_error(run_llmport({"bench", m, "-t", "2,1,02"}),
                     "error: --threads: 02 given twice in '2,1,02'; give each once (see llmport bench --help)\n");
  expect_usage_error(run_llmport({"bench", m, "-p", "16,8,16"}),
                     "error: --n-prompt: 16 given twice in '16,8,16'; give each once (see llmport bench --help)\n");
  // Token ids may repeat (the comma-list rule only refuses repeats where asked).
  const auto ids = run_llmport({"detokenize", m, "281,281"});
  EXPECT_EQ(ids.exit_code, 0) << ids.err;
}

// `llmport kernels` alone lists the subcommands, as `kernels bogus` does.
TEST(CliContract, AMissingSubcommandListsTheSubcommands) {
  expect_usage_error(run_llmport({"kernels"}),
                     "error: missing kernels subcommand (expected list, validate, sweep, probe) (see llmport kernels "
                     "--help)\n");
}

// An option's missing value followed by another option: CLI11 took the flag as the value,
// and `--svg --force` wrote a file named "--force" (`--kernel-cache --no-roofline` a cache
// directory "--no-roofline"). Refused before any work; `--opt=--value` still passes.
TEST(CliContract, AnOptionIsNeverTakenAsTheValueOfTheOptionBeforeIt) {
  const std::string m = stories_dir().string();
  TempDir t;
  const auto svg = run_llmport({"diagnosis", m, "--prompt", "Once", "--svg", "--force", "--out", (t.path() / "d").string()});
  expect_usage_error(svg, "error: --svg: expected a value, got the option --force (write --svg=VALUE for a value that "
                          "starts with '-') (see llmport diagnosis --help)\n");
  EXPECT_FALSE(fs::exists("--force"));
  expect_usage_error(run_llmport({"run", m, "--prompt", "--n-tokens", "3"}),
                     "error: --prompt: expected a value, got the option --n-tokens (write --prompt=VALUE for a value "
                     "that starts with '-') (see llmport run --help)\n");
  expect_usage_error(run_llmport({"kernels", "sweep", m, "--registry", "--decode"}),
                     "error: --registry: expected a value, got the option --decode (write --registry=VALUE for a "
                     "value that starts with '-') (see llmport kernels --help)\n");
  // A short option's hint is its long form: "-o=--force" would name a directory "=--force".
  expect_usage_error(run_llmport({"synth", "--preset", "tiny-llama", "-o", "--force"}),
                     "error: -o: expected a value, got the option --force (write --out=VALUE for a value that starts "
                     "with '-') (see llmport synth --help)\n");
  const auto eq = run_llmport({"run", m, "--prompt=--n-tokens", "-n", "1"});
  EXPECT_EQ(eq.exit_code, 0) << eq.err;
  const auto negative = run_llmport({"run", m, "--prompt", "Once", "--temperature", "-1"});
  EXPECT_EQ(negative.err.find("expected a value"), std::string::npos) << negative.err;  // a value, not an option
}

// `llmport` alone names the missing subcommand and lists them.
TEST(CliContract, NoSubcommandListsTheSubcommands) {
  const auto r = run_llmport({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(r.err.starts_with("error: missing subcommand (expected ")) << r.err;
  for (const char* c : {" deploy,", " run,", " serve,", " kernels,", " verify)"}) EXPECT_NE(r.err.find(c), std::string::npos) << c;
  EXPECT_TRUE(r.err.ends_with(") (see llmport --help)\n")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

// `llmport --bogus` is no command's option: named as an unknown option, not read as a
// missing subcommand.
TEST(CliContract, AnUnknownFirstOptionIsNamed) {
  for (const std::string flag : {"--bogus", "--bogus=3", "-q"}) {
    const auto r = run_llmport({flag});
    const std::string name = flag.substr(0, flag.find('='));
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_TRUE(r.err.starts_with("error: unknown option '" + name + "' (expected a command first: bench, ")) << r.err;
    EXPECT_TRUE(r.err.ends_with(", verify) (see llmport --help)\n")) << r.err;
    // Only the commands --help lists: not phase 7's hidden `evaluate`.
    EXPECT_EQ(r.err.find("evaluate"), std::string::npos) << r.err;
  }
}

// A JSON file that is no model config under another name (tokenizer.json copied as tok.json,
// a golden) is bad input naming it, not a REJECT (exit 3) of "architecture (none given)".
TEST(CliContract, AJsonFileThatIsNoModelConfigIsBadInput) {
  TempDir t;
  const fs::path tok = t.path() / "tok.json";
  fs::copy_file(shared_path("models/stories260K/tokenizer.json"), tok);
  for (const std::string cmd : {"check", "run"})
    expect_usage_error(run_llmport({cmd, tok.string()}),
                       "error: " + tok.string() +
                           ": not a model config (none of architectures, model_type, hidden_size, num_hidden_layers)\n");
  // tokenize reads tokenizer.json by that name: a renamed copy is refused, not swapped for
  // the tokenizer.json beside it.
  fs::copy_file(shared_path("models/stories260K/tokenizer.json"), t.path() / "tokenizer.json");
  expect_usage_error(run_llmport({"tokenize", tok.string(), "hi"}),
                     "error: " + tok.string() +
                         ": not a model directory, config.json or tokenizer.json (the tokenizer is read from a file "
                         "named tokenizer.json; give its directory)\n");
  EXPECT_EQ(run_llmport({"tokenize", (t.path() / "tokenizer.json").string(), "hi"}).exit_code, 0);
  // A real config without an architectures list is still judged by the gate.
  std::ofstream(t.path() / "cfg.json") << R"({"model_type": "gpt2", "n_layer": 2})";
  EXPECT_EQ(run_llmport({"check", (t.path() / "cfg.json").string()}).exit_code, 3);
}

// check reads the safetensors headers (not the weights): a truncated file is bad input
// naming the file and the tensor whose bytes are missing; it used to ACCEPT.
TEST(CliContract, CheckRefusesATruncatedSafetensorsFile) {
  TempDir t;
  const fs::path dir = stories_copy_without(t, "model.safetensors");
  const std::string full = read_file(fs::path(stories_dir().string()) / "model.safetensors");
  write_file(dir / "model.safetensors", full);
  const auto ok = run_llmport({"check", dir.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  write_file(dir / "model.safetensors", full.substr(0, full.size() - 100));
  const auto r = run_llmport({"check", dir.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const std::string file = (dir / "model.safetensors").string();
  EXPECT_EQ(r.err.rfind("error: " + file + ": ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("run past the end of the data area"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("file truncated?"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(".weight: data_offsets"), std::string::npos) << "names the tensor: " << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_EQ(r.out, "");
  // A bare config.json (no weights beside it) is still judged from the config alone.
  EXPECT_EQ(run_llmport({"check", shared_path("configs/gpt2.json").string()}).exit_code, 3);
}

// A tensor the model needs, missing from the safetensors header (its bytes still there, the
// header consistent): check named it only with --weights and ACCEPTed without.
TEST(CliContract, CheckNamesATensorMissingFromTheHeader) {
  TempDir t;
  const fs::path dir = stories_copy_without(t, "model.safetensors");
  const std::string full = read_file(fs::path(stories_dir().string()) / "model.safetensors");
  uint64_t len = 0;
  std::memcpy(&len, full.data(), 8);
  nlohmann::json header = nlohmann::json::parse(full.substr(8, len));
  ASSERT_EQ(header.erase("model.layers.0.input_layernorm.weight"), 1u);
  std::string h = header.dump();
  h.resize(len, ' ');  // the same length: every data offset stays valid
  write_file(dir / "model.safetensors", full.substr(0, 8) + h + full.substr(8 + len));
  const auto r = run_llmport({"check", dir.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "error: " + (dir / "model.safetensors").string() +
                       ": model.layers.0.input_layernorm.weight: missing tensor (attn_norm, layer 0)\n");
  EXPECT_EQ(r.out, "");
  // --weights prints the phase-0 report; its first line must not read as a plain ACCEPT.
  const auto w = run_llmport({"check", dir.string(), "--weights"});
  EXPECT_EQ(w.exit_code, 2) << w.out << w.err;
  EXPECT_EQ(w.out.substr(0, w.out.find('\n')),
            "ACCEPT: LlamaForCausalLM (llama) (architecture only: the phase-0 checks below FAIL)");
  EXPECT_NE(w.out.find("  FAIL weights: "), std::string::npos) << w.out;
}

// One wording for JSON that does not parse: "malformed JSON", in every source file.
TEST(CliContract, UnparsableJsonHasOneWording) {
  TempDir t;
  const fs::path dir = stories_copy_without(t, "tokenizer.json");
  write_file(dir / "tokenizer.json", "{\"model\": ");
  const auto r = run_llmport({"tokenize", dir.string(), "hi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: " + (dir / "tokenizer.json").string() + ": malformed JSON: ", 0), 0u) << r.err;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(LLMPORT_SOURCE_DIR) / "src")) {
    if (!e.is_regular_file()) continue;
    const std::string text = read_file(e.path());
    EXPECT_EQ(text.find("invalid JSON"), std::string::npos) << e.path() << " says \"invalid JSON\"";
  }
}

// `run M -p TEXT` is `run M --prompt TEXT` (llama.cpp's spelling, which users type): the
// same greedy continuation of the golden's story; diagnosis takes -p too.
TEST(CliContract, RunTakesDashPForThePrompt) {
  const auto longform = run_llmport({"run", stories_dir().string(), "--prompt", "Once upon a time", "-n", "8"});
  const auto shortform = run_llmport({"run", stories_dir().string(), "-p", "Once upon a time", "-n", "8"});
  ASSERT_EQ(longform.exit_code, 0) << longform.err;
  EXPECT_EQ(shortform.exit_code, 0) << shortform.err;
  EXPECT_EQ(shortform.out, longform.out);
  EXPECT_EQ(shortform.out.rfind("Once upon a time, there was a little girl", 0), 0u) << shortform.out;
  // An empty -p is the empty prompt, as --prompt "" is (its own message, not "unknown option").
  const auto empty = run_llmport({"run", stories_dir().string(), "-p", "", "-n", "2"});
  const auto empty_long = run_llmport({"run", stories_dir().string(), "--prompt", "", "-n", "2"});
  EXPECT_EQ(empty.exit_code, empty_long.exit_code) << empty.err;
  EXPECT_EQ(empty.err, empty_long.err);
}

}  // namespace
}  // namespace llmport::test
