// Each verify-side check below makes a run FAIL (or caps its verdict, or refuses its input)
// with its own message, and a test here makes it do so: the project rule is that every gate
// has a test that makes it fail. An audit found these without one: the token-set failures
// of the non-KLD gate, the caps for the reference backend and a planted fault, and the
// consistency checks of a reference step against its full logits and of a reference
// against the model's vocabulary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/verify.hpp"
#include "verify/format.hpp"
#include "verify/verify_support.hpp"

namespace llmport {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using test::has_cap;
using test::stories_dir;
using test::stories_golden;
using test::TempDir;

// stories260K (vocab 512) against its golden on the cpu backend, fp32, with `fault`
// planted and the mean-KL bound set to `kl_bound` (unset: the default).
VerifyResult verify_stories(const std::string& backend, const std::string& fault,
                            std::optional<double> kl_bound = std::nullopt) {
  VerifyOptions o;
  o.reference = "golden:" + stories_golden().string();
  o.engine.backend = backend;
  o.engine.threads = 1;
  set_dtype_flag(o.engine, "fp32");
  if (!fault.empty()) o.engine.fault = FaultInjection::parse(fault);
  o.kl_bound = kl_bound;
  return run_verify(stories_dir(), o);
}

std::string all_of(const std::vector<std::string>& v) { return testing::PrintToString(v); }

// Whether `text` starts with `prefix`; both printed when not.
testing::AssertionResult starts_with(const std::string& text, const std::string& prefix) {
  if (text.starts_with(prefix)) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "expected a message starting\n  " << prefix << "\ngot\n  "
                                     << (text.empty() ? "(nothing thrown)" : text);
}

// ---------------------------------------------------------------- token-set gates

// kv_off_by_one (decode steps only) with a KL bound of 1000: the mean-KL gate cannot fail,
// so the verdict rests on the token checks, and they name each prompt that fails them.
class GateCoverageTokenSets : public testing::Test {
 protected:
  static void SetUpTestSuite() { r_ = new VerifyResult(verify_stories("cpu", "kv_off_by_one", 1000.0)); }
  static void TearDownTestSuite() {
    delete r_;
    r_ = nullptr;
  }
  static const VerifyResult& r() { return *r_; }

 private:
  static inline VerifyResult* r_ = nullptr;
};

TEST_F(GateCoverageTokenSets, FreeRunningTokenSetFailureFailsTheRun) {
  ASSERT_EQ(r().gate, "token-sets") << r().gate;
  EXPECT_FALSE(r().pass) << r().verdict_line();
  EXPECT_EQ(r().verdict(), "FAIL");
  EXPECT_LE(r().mean_kl, r().kl_bound) << "the KL gate must not be what fails this run";
  int failing = 0;
  for (const auto& p : r().prompts) {
    if (p.free_running.pass) continue;
    ++failing;
    ASSERT_FALSE(p.free_running.message.empty()) << p.name;
    const std::string expected = "prompt " + p.name + " (free-running): " + p.free_running.message;
    EXPECT_TRUE(std::find(r().failures.begin(), r().failures.end(), expected) != r().failures.end())
        << expected << "\nnot among " << all_of(r().failures);
  }
  EXPECT_GT(failing, 0) << "kv_off_by_one no longer derails free-running decoding";
  // Failures, not warnings: the token sets gate a non-quantized run.
  for (const auto& w : r().warnings) EXPECT_EQ(w.find("(free-running)"), std::string::npos) << w;
}

TEST_F(GateCoverageTokenSets, TeacherForcedTop5FailureFailsTheRun) {
  EXPECT_FALSE(r().pass) << r().verdict_line();
  int failing = 0;
  for (const auto& p : r().prompts) {
    const auto st = std::find_if(p.teacher_forced.begin(), p.teacher_forced.end(),
                                 [](const TeacherForcedStep& s) { return !s.pass(); });
    if (st == p.teacher_forced.end()) continue;
    ++failing;
    EXPECT_FALSE(p.teacher_forced_top5_ok) << p.name;
    // One failure per prompt, naming its first failing step, both tokens and both top-5s.
    const std::string prefix = "prompt " + p.name + " step " + std::to_string(st->step) + " (teacher-forced): ";
    const auto hits = std::count_if(r().failures.begin(), r().failures.end(), [&](const std::string& f) {
      return f.find("prompt " + p.name + " step ") == 0 && f.find(" (teacher-forced): ") != std::string::npos;
    });
    EXPECT_EQ(hits, 1) << p.name << ": " << all_of(r().failures);
    const auto f = std::find_if(r().failures.begin(), r().failures.end(),
                                [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
    ASSERT_TRUE(f != r().failures.end()) << prefix << "\nnot among " << all_of(r().failures);
    EXPECT_NE(f->find("is not in the"), std::string::npos) << *f;
    EXPECT_NE(f->find("(engine token " + std::to_string(st->engine_top1) + ", reference token " +
                      std::to_string(st->reference_token) + ")"),
              std::string::npos)
        << *f;
    EXPECT_NE(f->find("; engine top-5 ["), std::string::npos) << *f;
    EXPECT_NE(f->find(", reference top-5 ["), std::string::npos) << *f;
  }
  EXPECT_GT(failing, 0) << "kv_off_by_one no longer moves a top-1 out of the other side's top-5";
}

// ---------------------------------------------------------------- verdict caps

TEST(GateCoverageCaps, TheReferenceBackendCapsAPassingRun) {
  const VerifyResult r = verify_stories("reference", "");
  ASSERT_TRUE(r.pass) << r.verdict_line() << " " << all_of(r.failures);
  EXPECT_EQ(r.backend, "reference");
  EXPECT_EQ(r.verdict(), "PASS-with-warnings") << r.verdict_line();
  EXPECT_TRUE(has_cap(r, "the engine runner uses the reference backend, not the target's kernels")) << all_of(r.caps);
  // The cpu backend's run of the same input is not capped for it.
  const VerifyResult cpu = verify_stories("cpu", "");
  EXPECT_FALSE(has_cap(cpu, "reference backend")) << all_of(cpu.caps);
}

TEST(GateCoverageCaps, APlantedFaultCapsAPassingRun) {
  // logit_scale=1 scales the logits by 1: the fault is planted and changes nothing.
  const VerifyResult r = verify_stories("cpu", "logit_scale=1");
  ASSERT_TRUE(r.pass) << r.verdict_line() << " " << all_of(r.failures);
  EXPECT_EQ(r.verdict(), "PASS-with-warnings") << r.verdict_line();
  EXPECT_TRUE(has_cap(r, "a test-only fault was planted in the engine: logit_scale=1")) << all_of(r.caps);
}

// Four distinct prompts that are one story's prompt and its first 1, 2 and 3 generated
// tokens: 4 x 24 steps by count, 27 distinct steps in fact (each prompt repeats the
// previous one's steps). It passed as deep enough for a plain PASS.
TEST(GateCoverageCaps, PromptsThatContinueOneTrajectoryAreNotDepth) {
  TempDir t;
  const RecordFile stories = read_record_file(stories_golden());
  RecordFile rf;
  rf.model = stories.model;
  rf.producer = stories.producer;
  rf.compute_dtype = "float32";
  rf.n_steps = 24;
  const RecordSequence& story = stories.sequences.at(0);
  for (int k = 0; k < 4; ++k) {
    RecordSequence seq;
    seq.name = "prefix" + std::to_string(k);
    seq.prompt_rendering = "ids";
    seq.prompt_ids = story.prompt_ids;
    for (int i = 0; i < k; ++i) seq.prompt_ids.push_back(story.steps.at(static_cast<std::size_t>(i)).token);
    seq.steps.assign(story.steps.begin() + k, story.steps.begin() + k + 24);
    for (auto& st : seq.steps) st.logits.clear();
    rf.sequences.push_back(seq);
  }
  write_record_file(t.path() / "prefixes.json", rf);
  VerifyOptions o;
  o.reference = "golden:" + (t.path() / "prefixes.json").string();
  o.engine.threads = 1;
  const VerifyResult r = run_verify(stories_dir(), o);
  ASSERT_TRUE(r.pass) << r.verdict_line() << " " << all_of(r.failures);
  EXPECT_EQ(r.distinct_prompts(), 4);
  EXPECT_EQ(r.distinct_steps(), 27);
  EXPECT_TRUE(has_cap(r, "depth: the 4 prompts x 24 steps compute only 27 distinct steps")) << all_of(r.caps);
}

// ---------------------------------------------------------------- reference records

// Runs verify of stories260K against `golden` and returns the error it throws, checking
// its type and that it exits 2 (bad input); "" when it throws none.
template <class E>
std::string refusal(const fs::path& golden) {
  try {
    (void)test::verify_golden(stories_dir(), golden, "fp32");
  } catch (const E& e) {
    EXPECT_EQ(e.exit_code(), kExitBadInput);
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return e.what();
  }
  return "";
}

// The stories golden as llmport-records/1 with a side file of full logits `width` wide,
// consistent with every top list and logsumexp (the other ids at -20), hidden states dropped.
RecordFile with_full_logits(std::size_t width) {
  RecordFile rf = read_record_file(stories_golden());
  for (auto& seq : rf.sequences) {
    seq.hidden = {};
    for (auto& st : seq.steps) {
      st.logits.assign(width, -20.0f);
      for (const auto& e : st.top)
        if (static_cast<std::size_t>(e.id) < width) st.logits[static_cast<std::size_t>(e.id)] = e.logit;
      st.logsumexp = log_sum_exp(st.logits);
    }
  }
  return rf;
}

// The side file's name and the step in error, as the reader states them.
std::string side_where(const fs::path& json_file, std::size_t seq, std::size_t step) {
  fs::path side = json_file;
  side.replace_extension(".safetensors");
  return side.string() + ": seq" + std::to_string(seq) + ".logits[" + std::to_string(step) + "] against sequences[" +
         std::to_string(seq) + "].steps[" + std::to_string(step) + "]: ";
}

// Entries 2-5 of one step replaced by filler ids 60+ nats below the top-1, the honest
// logsumexp kept: the fillers carry no probability, so the coarsened KL compared the top-1
// alone (a model with swapped embedding rows got a plain PASS and deployed). A top-k list
// bounds the logsumexp from above (the other ids are at most its smallest), and this one
// leaves the step's rest mass nowhere to be.
TEST(GateCoverageRecords, FillerEntriesBelowAnHonestLogsumexpAreRefused) {
  TempDir t;
  RecordFile rf = read_record_file(stories_golden());
  for (auto& seq : rf.sequences) {
    seq.hidden = {};
    for (auto& st : seq.steps) st.logits.clear();
  }
  const fs::path honest = t.path() / "honest.json";
  write_record_file(honest, rf);
  EXPECT_EQ(refusal<UsageError>(honest), "");
  RecordSequence& seq = rf.sequences[2];
  StepRecord& st = seq.steps[4];
  int id = 0;
  for (std::size_t i = 1; i < st.top.size(); ++i) {
    while (std::any_of(st.top.begin(), st.top.end(), [&](const TopEntry& e) { return e.id == id; })) ++id;
    st.top[i] = {id, st.top[0].logit - 60.0f - static_cast<float>(i)};
  }
  const fs::path g = t.path() / "fillers.json";
  write_record_file(g, rf);
  const std::string err = refusal<UsageError>(g);
  EXPECT_TRUE(starts_with(err, g.string() + ": sequence " + seq.name + " step 4: logsumexp " +
                                   verify_detail::fmt_g(*st.logsumexp, 7) + " is above the "))
      << err;
  EXPECT_NE(err.find("its top-5 allows (the other 507 logits are at most its smallest"), std::string::npos) << err;
  // A list of the whole vocabulary (the top-1, then every other id at -1000 - i) leaves no
  // other logit: the logsumexp must be its own (the ceiling was skipped for such a list).
  StepRecord& all = rf.sequences[2].steps[4];
  all = read_record_file(stories_golden()).sequences[2].steps[4];
  const TopEntry top1 = all.top[0];
  all.top = {top1};
  for (int v = 0, i = 0; v < 512; ++v)
    if (v != top1.id) all.top.push_back({v, -1000.0f - static_cast<float>(i++)});
  all.logits.clear();
  const fs::path whole = t.path() / "whole_vocab.json";
  write_record_file(whole, rf);
  const std::string err_all = refusal<UsageError>(whole);
  EXPECT_NE(err_all.find("its top-512 allows (the other 0 logits"), std::string::npos) << err_all;
}

TEST(GateCoverageRecords, TheConsistentSideFileIsAccepted) {
  // The base every edit below starts from reads cleanly: each refusal is its edit's.
  TempDir t;
  write_record_file(t.path() / "g.json", with_full_logits(512));
  EXPECT_NO_THROW(read_record_file(t.path() / "g.json"));
}

TEST(GateCoverageRecords, ANonFiniteFullLogitIsRefused) {
  TempDir t;
  RecordFile rf = with_full_logits(512);
  auto& st = rf.sequences[1].steps[3];
  std::size_t v = 0;  // an id outside the top list: only the full logits hold it
  while (std::any_of(st.top.begin(), st.top.end(), [&](const TopEntry& e) { return e.id == static_cast<int>(v); })) ++v;
  st.logits[v] = std::numeric_limits<float>::infinity();  // logsumexp left as it was (finite)
  const fs::path g = t.path() / "inf.json";
  write_record_file(g, rf);
  const std::string err = refusal<ConfigError>(g);
  EXPECT_EQ(err, side_where(g, 1, 3) + "full logit " + std::to_string(v) + " is not finite") << err;
}

TEST(GateCoverageRecords, ATopIdBeyondTheFullLogitsIsRefused) {
  TempDir t;
  RecordFile rf = with_full_logits(512);
  auto& st = rf.sequences[1].steps[3];
  st.top.back().id = 600;  // not the token (top-1), unique, and past the 512 full logits
  const fs::path g = t.path() / "wide_id.json";
  write_record_file(g, rf);
  const std::string err = refusal<ConfigError>(g);
  EXPECT_EQ(err, side_where(g, 1, 3) + "top id 600 is outside the 512 full logits") << err;
}

TEST(GateCoverageRecords, ATopListThatIsNotTheLargestLogitsIsRefused) {
  TempDir t;
  RecordFile rf = with_full_logits(512);
  auto& st = rf.sequences[1].steps[3];
  std::size_t v = 0;
  while (std::any_of(st.top.begin(), st.top.end(), [&](const TopEntry& e) { return e.id == static_cast<int>(v); })) ++v;
  st.logits[v] = st.top[0].logit + 1.0f;  // a larger logit the top list leaves out
  st.logsumexp = log_sum_exp(st.logits);
  const fs::path g = t.path() / "not_top.json";
  write_record_file(g, rf);
  const std::string err = refusal<ConfigError>(g);
  EXPECT_TRUE(starts_with(err, side_where(g, 1, 3) + "the top list is not the largest logits: rank 0 holds " +
                          verify_detail::fmt_g(st.top[0].logit, 9) + ", the full logits have " +
                          verify_detail::fmt_g(st.top[0].logit + 1.0f, 9) + " (id " + std::to_string(v) + ")"));
}

TEST(GateCoverageRecords, ALogsumexpThatIsNotTheFullLogitsOwnIsRefused) {
  TempDir t;
  RecordFile rf = with_full_logits(512);
  auto& st = rf.sequences[1].steps[3];
  const float own = *st.logsumexp;
  st.logsumexp = own + 0.1f;  // above the logits it sums: the mass check still holds
  const fs::path g = t.path() / "lse.json";
  write_record_file(g, rf);
  const std::string err = refusal<ConfigError>(g);
  EXPECT_TRUE(starts_with(err, side_where(g, 1, 3) + "logsumexp " + verify_detail::fmt_g(*st.logsumexp, 9) +
                          " is not the full logits' own "));
  EXPECT_NE(err.find(" is not the full logits' own " + verify_detail::fmt_g(log_sum_exp(st.logits), 9)),
            std::string::npos)
      << err;
}

TEST(GateCoverageRecords, AStepTokenOutsideTheVocabularyIsRefused) {
  // No full logits at that step (the stories golden holds them for step 0 only): the reader
  // cannot see the vocabulary; verify checks the file against the model's.
  TempDir t;
  std::ifstream in(stories_golden());
  json g = json::parse(in);
  auto& c = g["cases"][0];
  const std::string name = c["name"].get<std::string>();
  c["generated_ids"][5] = 900;
  c["steps"][5]["token_id"] = 900;
  c["steps"][5]["top5"][0]["id"] = 900;
  const fs::path f = t.path() / "token900.json";
  std::ofstream(f) << g.dump();
  EXPECT_NO_THROW(read_record_file(f));
  const std::string err = refusal<UsageError>(f);
  EXPECT_TRUE(
      starts_with(err, f.string() + ": sequence " + name + " step 5: token id 900 outside the vocabulary [0, 512)"));
}

TEST(GateCoverageRecords, FullLogitsOfAnotherWidthThanTheVocabularyAreRefused) {
  TempDir t;
  const RecordFile rf = with_full_logits(600);  // every id < 512: consistent, read cleanly
  const fs::path g = t.path() / "wide.json";
  write_record_file(g, rf);
  EXPECT_NO_THROW(read_record_file(g));
  const std::string err = refusal<UsageError>(g);
  EXPECT_TRUE(starts_with(
      err, g.string() + ": sequence " + rf.sequences[0].name + " step 0: 600 full logits for a vocabulary of 512"));
}

}  // namespace
}  // namespace llmport
