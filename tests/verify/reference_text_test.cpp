// The logit gates compare token ids; the text a deployment prints also goes through
// tokenizer.json (its normalizer before encoding, its decoder after) and stops where the
// model's stop ids say. Session 35's adversarial round passed stories260K plainly with a
// decoder that printed "Bob" for "Lily", a normalizer that encoded "happy" as "sad", and
// "." as a stop id. The golden's printed texts now hold the tokenizer (decode, pieces, round
// trip) and a stop id that is ordinary text: each caps the verdict (the ids agree, so what
// differs is the text, or a golden whose text contradicts its ids).
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "llmport/records.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/verify.hpp"
#include "support/test_support.hpp"
#include "verify/reference_text.hpp"
#include "verify/verify_support.hpp"

namespace llmport {
namespace {
namespace fs = std::filesystem;
using test::has_cap;
using test::has_failure;
using test::stories_golden;
using test::TempDir;
using test::verify_golden;

// stories260K copied to `dir` with its tokenizer.json edited by `edit`.
fs::path stories_with_tokenizer(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  const fs::path m = test::copy_stories(dir);
  nlohmann::json j = nlohmann::json::parse(test::read_file(m / "tokenizer.json"));
  edit(j);
  test::write_file(m / "tokenizer.json", j.dump());
  return m;
}

nlohmann::json replace_step(const std::string& from, const std::string& to) {
  return {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}

TEST(ReferenceText, TheHonestTokenizerReproducesEveryPrintedText) {
  const RecordFile g = read_record_file(stories_golden());
  const auto tok = Tokenizer::load(test::stories_dir());
  for (const RecordSequence& s : g.sequences) {
    ASSERT_TRUE(s.full_text && s.completion_text) << s.name;
    ASSERT_EQ(s.prompt_pieces.size(), s.prompt_ids.size()) << s.name;
    ASSERT_EQ(s.generated_pieces.size(), s.steps.size()) << s.name;
    int n = 0;
    EXPECT_EQ(verify_detail::reference_text_mismatch(s, *tok, &n), "") << s.name;
    EXPECT_EQ(n, 5) << s.name;  // prompt and generated pieces, decode, round trip, completion
  }
}

TEST(ReferenceText, ADecoderThatRewritesOutputFailsVerify) {
  TempDir t;
  const fs::path m = stories_with_tokenizer(t.path() / "m", [](nlohmann::json& j) {
    j["decoder"]["decoders"].push_back(replace_step("Lily", "Bob"));
  });
  const VerifyResult r = verify_golden(m, stories_golden());
  EXPECT_TRUE(r.pass) << r.verdict_line();  // the ids agree: capped, not failed
  EXPECT_TRUE(has_cap(r, "the reference's printed text is not what llmport's tokenizer makes of its ids: prompt "))
      << r.verdict_line();
  EXPECT_TRUE(has_cap(r, "decoding its ids gives")) << r.verdict_line();
  EXPECT_NE(r.reference_text_differs.find("named Bob"), std::string::npos) << r.reference_text_differs;
}

TEST(ReferenceText, ANormalizerThatRewritesInputFailsVerify) {
  TempDir t;
  const fs::path m = stories_with_tokenizer(t.path() / "m", [](nlohmann::json& j) {
    j["normalizer"]["normalizers"].push_back(replace_step("happy", "sad"));
  });
  const VerifyResult r = verify_golden(m, stories_golden());
  EXPECT_EQ(r.verdict(), "PASS-with-warnings") << r.verdict_line();
  EXPECT_TRUE(has_cap(r, "encoding and decoding its text gives")) << r.verdict_line();
}

TEST(ReferenceText, APieceRenamedInTheVocabularyIsNamed) {
  RecordFile g = read_record_file(stories_golden());
  const auto tok = Tokenizer::load(test::stories_dir());
  RecordSequence s = g.sequences.front();
  s.generated_pieces.back() = "\xe2\x96\x81zebra";
  const std::string why = verify_detail::reference_text_mismatch(s, *tok);
  EXPECT_NE(why.find("in the reference's"), std::string::npos) << why;
  EXPECT_NE(why.find("zebra"), std::string::npos) << why;
  // A completion text the ids do not decode to.
  s = g.sequences.front();
  s.full_text.reset();
  (*s.completion_text)[5] = '#';
  EXPECT_NE(verify_detail::reference_text_mismatch(s, *tok).find("after the prompt's"), std::string::npos);
  // A golden cut to fewer steps keeps its longer texts: a prefix is no difference.
  s = g.sequences.front();
  s.steps.resize(10);
  EXPECT_EQ(verify_detail::reference_text_mismatch(s, *tok), "");
}

// llmport-records/1 keeps the texts, so a golden written back still holds the tokenizer.
TEST(ReferenceText, RecordFilesKeepThePrintedTexts) {
  TempDir t;
  const RecordFile g = read_record_file(stories_golden());
  write_record_file(t.path() / "g.json", g);
  const RecordFile back = read_record_file(t.path() / "g.json");
  ASSERT_EQ(back.sequences.size(), g.sequences.size());
  for (std::size_t i = 0; i < g.sequences.size(); ++i) {
    EXPECT_EQ(back.sequences[i].full_text, g.sequences[i].full_text);
    EXPECT_EQ(back.sequences[i].completion_text, g.sequences[i].completion_text);
    EXPECT_EQ(back.sequences[i].prompt_pieces, g.sequences[i].prompt_pieces);
    EXPECT_EQ(back.sequences[i].generated_pieces, g.sequences[i].generated_pieces);
  }
}

TEST(ReferenceText, AStopIdThatIsOrdinaryTextCapsTheVerdict) {
  TempDir t;
  const fs::path m = test::copy_stories(t.path() / "m");
  const auto tok = Tokenizer::load(m);
  const int period = *tok->token_to_id(".");
  test::write_file(m / "generation_config.json",
                   nlohmann::json{{"bos_token_id", 1}, {"eos_token_id", {2, period}}}.dump());
  const VerifyResult r = verify_golden(m, stories_golden());
  EXPECT_TRUE(r.pass) << r.verdict_line();
  EXPECT_EQ(r.ordinary_stop_ids, std::to_string(period) + " ('.')");
  EXPECT_TRUE(has_cap(r, "generation stops at ordinary text: stop id " + std::to_string(period) + " ('.')"))
      << r.verdict_line();
  // The honest model's stop id is </s>, a special token: no cap.
  EXPECT_EQ(verify_golden(test::stories_dir(), stories_golden()).ordinary_stop_ids, "");
}

}  // namespace
}  // namespace llmport
