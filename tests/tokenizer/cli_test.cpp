// `llmport tokenize` / `llmport detokenize` against the golden ids.
#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

using nlohmann::json;

TEST(TokenizeCli, TextWithAndWithoutSpecialTokens) {
  auto dir = shared_path("tokenizers/llama3").string();
  auto r = run_llmport({"tokenize", dir, "Hello world"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tokenizer& tok = cached_tokenizer(dir);
  EXPECT_EQ(json::parse(r.out).get<std::vector<int>>(), tok.encode("Hello world"));
  r = run_llmport({"tokenize", dir, "Hello world", "--no-special"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).get<std::vector<int>>(), tok.encode("Hello world", {false, false}));
  r = run_llmport({"tokenize", "--model", dir, "--no-special"}, "Hello world");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).get<std::vector<int>>(), tok.encode("Hello world", {false, false}));
}

// Batch mode over every golden case of every tokenizer: one load per tokenizer.
TEST(TokenizeCli, JsonlMatchesGoldenInAllModes) {
  for (const auto& name : golden_tokenizer_names()) {
    ASSERT_NE(name, "<missing>");
    auto dir = shared_path("tokenizers/" + name);
    json g = read_json(dir / "golden.json");
    TempDir t;
    std::string lines;
    for (const auto& c : g["cases"]) lines += c["text"].dump() + "\n";
    write_file(t.path() / "in.jsonl", lines);
    struct Mode {
      std::vector<std::string> flags;
      const char* field;
    };
    for (const Mode& m : {Mode{{}, "ids"}, Mode{{"--no-special"}, "ids_no_special"},
                          Mode{{"--no-special", "--split-special"}, "ids_split_special"}}) {
      std::vector<std::string> args{"tokenize", dir.string(), "--jsonl", (t.path() / "in.jsonl").string()};
      args.insert(args.end(), m.flags.begin(), m.flags.end());
      auto r = run_llmport(args);
      ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
      std::istringstream out(r.out);
      std::string line;
      for (const auto& c : g["cases"]) {
        ASSERT_TRUE(std::getline(out, line)) << name << " " << m.field;
        EXPECT_EQ(json::parse(line), c[m.field]) << name << " " << m.field << " " << c["id"];
      }
      EXPECT_FALSE(std::getline(out, line)) << "extra output";
    }
  }
}

TEST(TokenizeCli, TokenizerOnlyDirectoryNeedsNoConfigJson) {
  TempDir t;
  auto src = shared_path("tokenizers/mistral_v0_1");
  std::filesystem::copy_file(src / "tokenizer.json", t.path() / "tokenizer.json");
  auto r = run_llmport({"tokenize", t.path().string(), "Hello world"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json({1, 22557, 1526}));
}

// tokenizer_config.json saying what tokenizer.json does not: the ids are tokenizer.json's
// (the Rust library's reading), and each difference is a warning line on stderr; the real
// shared tokenizers print none.
TEST(TokenizeCli, TokenizerFilesThatDisagreeAreWarnedAbout) {
  TempDir t;
  auto src = shared_path("tokenizers/mistral_v0_1");
  std::filesystem::copy_file(src / "tokenizer.json", t.path() / "tokenizer.json");
  json cfg = read_json(src / "tokenizer_config.json");
  cfg["add_eos_token"] = true;
  write_file(t.path() / "tokenizer_config.json", cfg.dump());
  auto r = run_llmport({"tokenize", t.path().string(), "Hello world"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json({1, 22557, 1526}));
  EXPECT_EQ(r.err.rfind("warning: " + (t.path() / "tokenizer_config.json").string() +
                            ": add_eos_token is true, but tokenizer.json's post_processor adds no EOS ('</s>')",
                        0),
            0U)
      << r.err;
  r = run_llmport({"tokenize", src.string(), "Hello world"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// Every golden case's ids of both decoders (SentencePiece-style mistral, byte-level qwen3),
// one --jsonl process per tokenizer; the argument forms each once.
TEST(DetokenizeCli, PrintsDecodedText) {
  for (const char* name : {"mistral_v0_1", "qwen3"}) {
    SCOPED_TRACE(name);
    const auto dir = shared_path(std::string("tokenizers/") + name);
    // Named: a range-for over read_json(...)["cases"] iterates a member of a destroyed
    // temporary (use-after-free, found by ASan).
    const json golden = read_json(dir / "golden.json");
    ASSERT_FALSE(golden["cases"].empty());
    TempDir t;
    std::string lines;
    for (const auto& c : golden["cases"]) lines += c["ids"].dump() + "\n";
    write_file(t.path() / "ids.jsonl", lines);
    auto r = run_llmport({"detokenize", dir.string(), "--jsonl", (t.path() / "ids.jsonl").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream out(r.out);
    std::string line;
    for (const auto& c : golden["cases"]) {
      ASSERT_TRUE(std::getline(out, line)) << c["id"];
      EXPECT_EQ(json::parse(line), c["decoded"]) << c["id"];
    }
    EXPECT_FALSE(std::getline(out, line)) << "extra output";
    // One case as separate id arguments, --json.
    const json& c = golden["cases"].back();
    std::vector<std::string> args{"detokenize", dir.string(), "--json"};
    for (int id : c["ids"].get<std::vector<int>>()) args.push_back(std::to_string(id));
    r = run_llmport(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out), c["decoded"]) << c["id"];
  }
  const auto dir = shared_path("tokenizers/qwen3");
  auto r = run_llmport({"detokenize", dir.string(), "[9707, 1879]"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world\n");
  r = run_llmport({"detokenize", dir.string(), "151644", "9707", "--skip-special"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello\n");
  // --jsonl with --skip-special, from stdin; tokenize --jsonl output decodes back.
  r = run_llmport({"detokenize", dir.string(), "--jsonl", "-", "--skip-special"}, "[151644, 9707]\n[]\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "\"Hello\"\n\"\"\n");
}

// A bad --jsonl line is one line naming FILE:LINE, exit 2; IDS and --jsonl together too.
TEST(DetokenizeCli, BadJsonlLineNamesItsLine) {
  const std::string dir = shared_path("tokenizers/qwen3").string();
  TempDir t;
  struct Case {
    std::string second_line, error;
  };
  for (const Case& c : {Case{"\"text\"", "ids.jsonl:2: not a JSON array of token ids"},
                        Case{"[1, \"x\"]", "ids.jsonl:2: element 2 (\"x\") is not a token id"},
                        Case{"[1, -3]", "ids.jsonl:2: element 2 (-3) is not a token id"},
                        Case{"[2.5]", "ids.jsonl:2: element 1 (2.5) is not a token id"},
                        Case{"[5, 99999999]", "ids.jsonl:2: element 2: token id 99999999 is out of range (vocab size"},
                        Case{"[1,", "ids.jsonl:2"}}) {
    SCOPED_TRACE(c.second_line);
    write_file(t.path() / "ids.jsonl", "[9707]\n" + c.second_line + "\n");
    const auto r = run_llmport({"detokenize", dir, "--jsonl", (t.path() / "ids.jsonl").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(c.error), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const auto r = run_llmport({"detokenize", dir, "1", "--jsonl", (t.path() / "ids.jsonl").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give either IDS or --jsonl FILE, not both"), std::string::npos) << r.err;
}

TEST(TokenizeCli, BadInputExitsTwoWithOneLine) {
  auto dir = shared_path("tokenizers/qwen3").string();
  TempDir t;
  write_file(t.path() / "bad.jsonl", "\"ok\"\n{\"not\": \"a string\"}\n");
  auto r = run_llmport({"tokenize", dir, "--jsonl", (t.path() / "bad.jsonl").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.jsonl:2"), std::string::npos) << r.err;
  r = run_llmport({"detokenize", dir, "99999999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("out of range"), std::string::npos) << r.err;
  r = run_llmport({"detokenize", dir, "12x"});
  EXPECT_EQ(r.exit_code, 2);
  write_file(t.path() / "tokenizer.json", "{broken");
  r = run_llmport({"tokenize", t.path().string(), "hi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("malformed JSON"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace llmport::test
