// The generated printable-ASCII tokenizer of `llmport synth --ascii-tokenizer`: its layout
// (ids, merges, specials at the config's ids), that llmport's Tokenizer loads it, that every id
// decodes to printable ASCII, that text round-trips, and that a random-weight model run with
// it prints readable text.
#include <algorithm>

#include "llmport/error.hpp"
#include "llmport/synth.hpp"
#include "llmport/synth_tokenizer.hpp"
#include "llmport/tokenizer.hpp"
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace fs = std::filesystem;
namespace {

bool printable_ascii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

std::unique_ptr<Tokenizer> write_and_load(const SynthTokenizer& t, const fs::path& dir) {
  fs::create_directories(dir);
  write_file(dir / "tokenizer.json", t.tokenizer.dump());
  write_file(dir / "tokenizer_config.json", t.tokenizer_config.dump());
  return Tokenizer::load(dir);
}

// tiny-llama's shape: 1024 ids, BOS 1000, EOS 1001.
TEST(SynthTokenizer, LayoutOfTheTinyLlamaVocabulary) {
  TempDir tmp;
  const auto t = ascii_bpe_tokenizer(1024, 1000, {1001}, 256);
  // 1024 ids - 2 specials - 95 characters = 927 merges, breadth-first from " " + 'e'.
  ASSERT_EQ(t.tokenizer["model"]["merges"].size(), 927u);
  EXPECT_EQ(t.tokenizer["model"]["merges"][0], nlohmann::json::array({" ", "e"}));
  EXPECT_EQ(t.tokenizer["model"]["merges"][926], nlohmann::json::array({"R", "g"}));
  EXPECT_EQ(t.tokenizer_config["bos_token"], "<s>");
  EXPECT_EQ(t.tokenizer_config["eos_token"], "</s>");
  EXPECT_EQ(t.tokenizer_config["model_max_length"], 256);
  const auto tok = write_and_load(t, tmp.path());
  EXPECT_EQ(tok->vocab_size(), 1024);
  const std::vector<std::pair<int, std::string>> expect = {
      {0, " "}, {1, "e"}, {26, "z"}, {27, "E"}, {94, "~"}, {95, " e"}, {96, " t"},
      {999, "Hv"}, {1000, "<s>"}, {1001, "</s>"}, {1002, "Hk"}, {1023, "Rg"}};
  for (const auto& [id, piece] : expect) EXPECT_EQ(tok->id_to_token(id), piece) << id;
  EXPECT_TRUE(tok->is_special(1000));
  EXPECT_TRUE(tok->is_special(1001));
  EXPECT_FALSE(tok->is_special(999));
  EXPECT_EQ(tok->bos_id(), 1000);
  EXPECT_EQ(tok->eos_id(), 1001);
}

TEST(SynthTokenizer, EveryIdDecodesToPrintableAscii) {
  TempDir tmp;
  const auto tok = write_and_load(ascii_bpe_tokenizer(1024, 1000, {1001}, 256), tmp.path());
  std::vector<int> all;
  for (int id = 0; id < 1024; ++id) {
    const std::string s = tok->decode({id});
    EXPECT_FALSE(s.empty()) << id;
    EXPECT_TRUE(printable_ascii(s)) << id << ": " << s;
    all.push_back(id);
  }
  // Fuse concatenates: the whole vocabulary decodes to the pieces side by side, skipping
  // the two specials when asked.
  const std::string joined = tok->decode(all, /*skip_special_tokens=*/true);
  EXPECT_TRUE(printable_ascii(joined));
  EXPECT_EQ(joined.substr(0, 4), " eta");
  EXPECT_EQ(joined.find("<s>"), std::string::npos);
}

TEST(SynthTokenizer, EncodesByMergeRankAndRoundTrips) {
  TempDir tmp;
  const auto tok = write_and_load(ascii_bpe_tokenizer(1024, 1000, {1001}, 256), tmp.path());
  const std::string text = "Hello, world 42! The quick brown fox.";
  const auto ids = tok->encode(text);  // BOS first (the post-processor)
  std::vector<std::string> pieces;
  for (int id : ids) pieces.push_back(tok->id_to_token(id));
  // "el" (rank 36) merges before "lo" (289); "He" exists but "e" is taken first; digits
  // and punctuation stay single characters.
  const std::vector<std::string> want = {"<s>", "H", "el", "lo", ",", " w", "or", "ld", " ", "4", "2", "!", " ",
                                         "T", "he", " q", "u", "ic", "k", " b", "r", "ow", "n", " f", "ox", "."};
  EXPECT_EQ(pieces, want);
  EXPECT_EQ(ids[0], 1000);
  EXPECT_EQ(ids[1], 34);  // "H": alphabet index 1 + 26 + 7
  const std::string sample = "  Once upon a time, Tom & Sue said: \"x = [1, 2]; y ~ {3}?\" ~_~ END\t";
  EncodeOptions raw;
  raw.add_special_tokens = false;
  // The tab is not printable ASCII: it has no token, and encode drops it.
  const std::string printable = sample.substr(0, sample.size() - 1);
  const auto sids = tok->encode(sample, raw);
  EXPECT_EQ(tok->decode(sids), printable);
  EXPECT_EQ(tok->encode(tok->decode(sids), raw), sids);
  EXPECT_EQ(tok->decode(ids, /*skip_special_tokens=*/true), text);
}

TEST(SynthTokenizer, DeterministicAndSharedBosEos) {
  EXPECT_EQ(ascii_bpe_tokenizer(1024, 1000, {1001}, 256).tokenizer.dump(),
            ascii_bpe_tokenizer(1024, 1000, {1001}, 256).tokenizer.dump());
  // tiny-qwen2: BOS == EOS == 1000, one special token, 1023 ordinary pieces.
  TempDir tmp;
  const auto t = ascii_bpe_tokenizer(1024, 1000, {1000}, 256);
  EXPECT_EQ(t.tokenizer["added_tokens"].size(), 1u);
  EXPECT_EQ(t.tokenizer["model"]["merges"].size(), 1023u - 95u);
  EXPECT_EQ(t.tokenizer_config["bos_token"], "</s>");
  const auto tok = write_and_load(t, tmp.path());
  EXPECT_EQ(tok->bos_id(), 1000);
  EXPECT_EQ(tok->eos_id(), 1000);
  EXPECT_EQ(tok->encode("a").front(), 1000);
  // Several EOS ids get their own names.
  const auto multi = ascii_bpe_tokenizer(200, 1, {2, 3}, 64);
  EXPECT_EQ(multi.tokenizer["model"]["vocab"]["<|eos_1|>"], 3);
  EXPECT_EQ(multi.tokenizer["model"]["vocab"]["</s>"], 2);
  EXPECT_EQ(multi.tokenizer["model"]["vocab"]["<s>"], 1);
}

TEST(SynthTokenizer, RealShapeVocabularyHasWholeWords) {
  TempDir tmp;
  // qwen3-0.6b: 151936 ids; level 4 of the breadth-first merges holds " the".
  const auto tok = write_and_load(ascii_bpe_tokenizer(151936, 151643, {151645}, 40960), tmp.path());
  EXPECT_EQ(tok->vocab_size(), 151936);
  EXPECT_EQ(tok->id_to_token(151645), "</s>");
  const auto the = tok->token_to_id(" the");
  ASSERT_TRUE(the.has_value());
  EXPECT_EQ(tok->decode({*the}), " the");
  // Encoding is greedy by merge rank: " t" (rank 1) and "he" (rank 208) come before
  // (" t", "h"), so the text " the" encodes as two pieces; the model can still emit the one.
  EncodeOptions raw;
  raw.add_special_tokens = false;
  const auto ids = tok->encode(" the", raw);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(tok->id_to_token(ids[0]), " t");
  EXPECT_EQ(tok->id_to_token(ids[1]), "he");
  EXPECT_TRUE(printable_ascii(tok->decode({151935})));
}

TEST(SynthTokenizer, RejectsATooSmallVocabularyAndStrayIds) {
  // 95 characters + 2 specials is the minimum: 97 works (no merges), 96 does not.
  EXPECT_EQ(ascii_bpe_tokenizer(97, 0, {1}, 8).tokenizer["model"]["merges"].size(), 0u);
  try {
    ascii_bpe_tokenizer(96, 0, {1}, 8);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "synth tokenizer: vocab_size 96 is too small for the 95 printable ASCII "
                                     "characters and 2 special tokens");
  }
  try {
    ascii_bpe_tokenizer(1024, 1024, {}, 8);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "synth tokenizer: bos id 1024 is outside the vocabulary [0, 1024)");
  }
}

TEST(SynthTokenizer, CliWritesItAndRunPrintsReadableText) {
  TempDir tmp;
  const auto out = tmp.path() / "m";
  auto r = run_llmport({"synth", "--preset", "tiny-llama", "--out", out.string(), "--seed", "1", "--ascii-tokenizer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto cfg = load_json(out / "config.json");
  EXPECT_EQ(cfg["vocab_size"], 1024);
  EXPECT_EQ(load_json(out / "tokenizer_config.json")["eos_token"], "</s>");
  // The tokenizer depends on the config only, not the seed.
  const auto out2 = tmp.path() / "m2";
  r = run_llmport({"synth", "--preset", "tiny-llama", "--out", out2.string(), "--seed", "9", "--ascii-tokenizer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(out / "tokenizer.json"), read_file(out2 / "tokenizer.json"));

  r = run_llmport({"run", out.string(), "--prompt", "Once upon a time", "--n-tokens", "16", "--ignore-eos"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string line = r.out.substr(0, r.out.find('\n'));
  ASSERT_EQ(line.rfind("Once upon a time", 0), 0u) << r.out;
  const std::string generated = line.substr(16);
  EXPECT_FALSE(generated.empty());
  EXPECT_TRUE(printable_ascii(generated)) << generated;

  r = run_llmport({"run", out.string(), "--prompt", "Once upon a time", "--n-tokens", "16", "--ignore-eos", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["generated_ids"].size(), 16u);
  const auto tok = Tokenizer::load(out);
  EXPECT_EQ(j["prompt_ids"], nlohmann::json(tok->encode("Once upon a time")));
  EXPECT_EQ(j["text"], tok->decode(j["generated_ids"].get<std::vector<int>>(), true));
  EXPECT_EQ(j["text"], generated);  // the streamed text is the decoded ids
}

TEST(SynthTokenizer, CliRefusesItWithACopiedTokenizer) {
  TempDir tmp;
  const auto r = run_llmport({"synth", "--preset", "tiny-llama", "--out", (tmp.path() / "m").string(),
                              "--ascii-tokenizer", "--tokenizer", shared_path("models/stories260K").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ascii-tokenizer"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp.path() / "m" / "model.safetensors"));
  // The library refuses the pair too.
  SynthOptions o;
  o.preset = "tiny-llama";
  o.out = tmp.path() / "lib";
  o.ascii_tokenizer = true;
  o.tokenizer_dir = shared_path("models/stories260K");
  EXPECT_THROW(write_synthetic_model(o), UsageError);
  EXPECT_FALSE(fs::exists(o.out));
}

}  // namespace
}  // namespace llmport::test
