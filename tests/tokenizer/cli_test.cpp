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

TEST(DetokenizeCli, PrintsDecodedText) {
  // One process per case: the small SentencePiece-style tokenizer keeps this fast.
  auto sp_dir = shared_path("tokenizers/mistral_v0_1");
  // Named: a range-for over read_json(...)["cases"] iterates a member of a destroyed
  // temporary (use-after-free, found by ASan).
  const json sp_golden = read_json(sp_dir / "golden.json");
  for (const auto& c : sp_golden["cases"]) {
    auto ids = c["ids"].get<std::vector<int>>();
    std::vector<std::string> args{"detokenize", sp_dir.string(), "--json"};
    for (int id : ids) args.push_back(std::to_string(id));
    auto r = run_llmport(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out).get<std::string>(), c["decoded"].get<std::string>()) << c["id"];
  }
  auto dir = shared_path("tokenizers/qwen3");
  json g = read_json(dir / "golden.json");
  for (const auto& c : g["cases"]) {
    std::string text = c["text"];
    if (std::all_of(text.begin(), text.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x80; }))
      continue;  // byte-level decoding of multi-byte text only
    auto ids = c["ids"].get<std::vector<int>>();
    std::vector<std::string> args{"detokenize", dir.string(), "--json"};
    for (int id : ids) args.push_back(std::to_string(id));
    auto r = run_llmport(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out).get<std::string>(), c["decoded"].get<std::string>()) << c["id"];
  }
  auto r = run_llmport({"detokenize", dir.string(), "[9707, 1879]"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world\n");
  r = run_llmport({"detokenize", dir.string(), "151644", "9707", "--skip-special"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello\n");
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
