// The gate against the shared goldens: stories260K and every synthetic model PASS (fp32
// and bf16); the report carries the counts and provenance the phase-7 audit needs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/records.hpp"
#include "verify/verify_support.hpp"

namespace llmport {
namespace {
namespace fs = std::filesystem;

void expect_pass_with_counts(const VerifyResult& r, const RecordFile& g) {
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_TRUE(r.pass);
  EXPECT_TRUE(r.free_running_pass);
  EXPECT_TRUE(r.teacher_forced_pass);
  EXPECT_EQ(r.reference_kind, "golden");
  EXPECT_TRUE(r.reference_independent);
  EXPECT_EQ(r.prompt_set, "golden");
  EXPECT_TRUE(r.full);
  // All of the golden's prompts and its step count.
  EXPECT_EQ(r.n_prompts, static_cast<int>(g.sequences.size()));
  EXPECT_EQ(r.n_steps, g.n_steps);
  EXPECT_EQ(r.engine_tokens_generated, static_cast<int64_t>(g.sequences.size()) * g.n_steps);
  EXPECT_EQ(r.teacher_forced_steps, static_cast<int64_t>(g.sequences.size()) * g.n_steps);
  EXPECT_EQ(r.engine_forward_calls, 2 * static_cast<int64_t>(g.sequences.size()) * g.n_steps);
  EXPECT_EQ(r.kl_kind, KlKind::Coarsened);
  EXPECT_LT(r.mean_kl, r.kl_bound / 3) << "bf16/fp32 runs must pass with a wide margin";
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_FALSE(r.dispatch_counters.empty());
  for (const auto& p : r.prompts) {
    EXPECT_EQ(static_cast<int>(p.engine_tokens.size()), g.n_steps) << p.name;
    EXPECT_TRUE(p.tokenization_ok) << p.name << ": " << p.tokenization;
  }
}

TEST(VerifyGolden, Stories260KPassesFp32AndBf16) {
  const RecordFile g = read_record_file(test::stories_golden());
  for (const char* dtype : {"fp32", "bf16"}) {
    SCOPED_TRACE(dtype);
    const VerifyResult r = test::verify_golden(test::stories_dir(), test::stories_golden(), dtype);
    expect_pass_with_counts(r, g);
    EXPECT_EQ(r.dtype, dtype);
    // The golden's text prompts encode to its ids with llmport's tokenizer.
    for (const auto& p : r.prompts) EXPECT_EQ(p.tokenization, "matches the reference") << p.name;
    if (std::string(dtype) == "fp32") {
      // fp32 reproduces the golden's greedy ids exactly.
      for (std::size_t i = 0; i < r.prompts.size(); ++i)
        EXPECT_EQ(r.prompts[i].engine_tokens, g.sequences[i].tokens()) << r.prompts[i].name;
      EXPECT_DOUBLE_EQ(r.top1_agreement, 1.0);
    }
  }
}

TEST(VerifyGolden, EverySyntheticModelPassesItsGolden) {
  const auto models = test::synthetic_models();
  ASSERT_FALSE(models.empty());
  for (const auto& m : models) {
    const RecordFile g = read_record_file(m / "golden.json");
    for (const char* dtype : {"fp32", "bf16"}) {
      SCOPED_TRACE(m.filename().string() + " " + dtype);
      const VerifyResult r = test::verify_golden(m, m / "golden.json", dtype);
      expect_pass_with_counts(r, g);
      EXPECT_EQ(r.prompt_rendering, "ids");
    }
  }
}

TEST(VerifyGolden, ReportFilesCarryTheAuditFields) {
  test::TempDir tmp;
  VerifyOptions o;
  o.reference = "golden:" + test::stories_golden().string();
  o.engine.threads = 1;
  o.report_dir = tmp.path() / "r";
  const VerifyResult r = run_verify(test::stories_dir(), o);
  ASSERT_TRUE(r.pass);
  const auto j = nlohmann::json::parse(test::read_file(tmp.path() / "r" / "report.json"));
  EXPECT_EQ(j["verdict"], "PASS");
  EXPECT_EQ(j["engine"]["runner"], "engine");
  EXPECT_EQ(j["engine"]["backend"], "cpu");
  EXPECT_TRUE(j["engine"]["heuristic_default_configs"].get<bool>());
  EXPECT_FALSE(j["engine"]["dispatch_counters"].empty());
  EXPECT_EQ(j["reference"]["kind"], "golden");
  EXPECT_TRUE(j["reference"]["independent"].get<bool>());
  EXPECT_EQ(j["tolerances"]["kl_bound"].get<double>(), kKlBoundFp32);  // fp32 engine vs fp32 golden
  EXPECT_EQ(j["tolerances"]["top_k"].get<int>(), 5);
  EXPECT_EQ(j["counts"]["prompts"].get<int>(), r.n_prompts);
  EXPECT_EQ(j["counts"]["engine_tokens_generated"].get<int64_t>(), r.engine_tokens_generated);
  EXPECT_EQ(j["prompts"].size(), static_cast<std::size_t>(r.n_prompts));
  const std::string md = test::read_file(tmp.path() / "r" / "report.md");
  EXPECT_NE(md.find("**Verdict: PASS**"), std::string::npos);
  EXPECT_NE(md.find("independent"), std::string::npos);
  // A second run into the same directory never overwrites it.
  EXPECT_THROW(run_verify(test::stories_dir(), o), UsageError);
}

// A golden's prompt texts beside a model without tokenizer.json: the ids are what is
// compared, and each prompt says its text was not checked against them.
TEST(VerifyGolden, PromptTextsOfAModelWithoutATokenizerAreLabelledNotChecked) {
  test::TempDir t;
  const fs::path model = test::copy_stories(t.path() / "no_tokenizer");
  fs::remove(model / "tokenizer.json");
  const VerifyResult r = test::verify_golden(model, test::stories_golden(), "fp32");
  EXPECT_TRUE(r.pass) << r.verdict_line();
  ASSERT_FALSE(r.prompts.empty());
  for (const auto& p : r.prompts) {
    EXPECT_TRUE(p.tokenization_ok) << p.name;
    EXPECT_EQ(p.tokenization.rfind("not checked: the model has no tokenizer.json", 0), 0u) << p.name << ": " << p.tokenization;
  }
}

// A golden's raw prompt that the tokenizer cannot encode (PCRE2 gives up on the
// pre-tokenizer's pattern) is the tokenizer's error: it was once read as "not checked", as a
// chat template llmport cannot render is, and the verdict stayed a plain PASS.
TEST(VerifyGolden, ARawPromptTheTokenizerCannotEncodeIsAnError) {
  test::TempDir tmp;
  const fs::path model = test::copy_stories(tmp.path() / "m");
  auto tj = nlohmann::json::parse(test::read_file(model / "tokenizer.json"));
  tj["pre_tokenizer"] = {{"type", "Split"},
                         {"pattern", {{"Regex", "(?:a+)+[^a]"}}},  // exponential on a run of a's
                         {"behavior", "Isolated"},
                         {"invert", false}};
  test::write_file(model / "tokenizer.json", tj.dump());
  auto g = nlohmann::json::parse(test::read_file(test::stories_golden()));
  g["cases"][0]["prompt"] = std::string(64, 'a');
  test::write_file(tmp.path() / "g.json", g.dump());
  try {
    test::verify_golden(model, tmp.path() / "g.json");
    ADD_FAILURE() << "verify ran";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("pre-tokenizer regex '(?:a+)+[^a]' failed on the input text"),
              std::string::npos)
        << e.what();
  }
}

TEST(VerifyGolden, GoldenIdsOutsideTheVocabularyAreBadInput) {
  test::TempDir tmp;
  auto j = nlohmann::json::parse(test::read_file(test::stories_golden()));
  j["cases"][0]["prompt_ids"][1] = 100000;
  test::write_file(tmp.path() / "g.json", j.dump());
  EXPECT_THROW(test::verify_golden(test::stories_dir(), tmp.path() / "g.json"), UsageError);
}

}  // namespace
}  // namespace llmport
