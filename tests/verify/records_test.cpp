// Record files: both shared golden formats read as they are (iterating over what the
// files hold), llmport's own format with its safetensors side file, malformed input.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/records.hpp"
#include "support/test_support.hpp"
#include "verify/format.hpp"
#include "verify/record_checks.hpp"
#include "verify/verify_support.hpp"

namespace llmport {
namespace {
namespace fs = std::filesystem;

nlohmann::json load(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

std::vector<fs::path> synthetic_goldens() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(test::shared_path("models/synthetic")))
    if (fs::exists(e.path() / "golden.json")) out.push_back(e.path() / "golden.json");
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Records, StoriesGoldenReadAsItIs) {
  const fs::path file = test::shared_path("models/stories260K/golden/public.json");
  const auto j = load(file);
  const RecordFile rf = read_record_file(file);
  EXPECT_EQ(rf.format, "stories-golden");
  EXPECT_TRUE(rf.independent);
  EXPECT_EQ(rf.n_steps, j["steps"].get<int>());
  ASSERT_EQ(rf.sequences.size(), j["cases"].size());
  ASSERT_FALSE(rf.sequences.empty());
  for (std::size_t c = 0; c < rf.sequences.size(); ++c) {
    const auto& jc = j["cases"][c];
    const auto& s = rf.sequences[c];
    SCOPED_TRACE(s.name);
    EXPECT_EQ(s.name, jc["name"].get<std::string>());
    EXPECT_EQ(*s.prompt, jc["prompt"].get<std::string>());
    EXPECT_EQ(s.prompt_ids, jc["prompt_ids"].get<std::vector<int>>());
    EXPECT_EQ(s.tokens(), jc["generated_ids"].get<std::vector<int>>());
    ASSERT_EQ(s.steps.size(), jc["steps"].size());
    for (std::size_t k = 0; k < s.steps.size(); ++k) {
      const auto& js = jc["steps"][k];
      ASSERT_EQ(s.steps[k].top.size(), js["top5"].size());
      EXPECT_EQ(s.steps[k].top[0].id, js["top5"][0]["id"].get<int>());
      EXPECT_FLOAT_EQ(s.steps[k].top[0].logit, js["top5"][0]["logit"].get<float>());
      ASSERT_TRUE(s.steps[k].logsumexp.has_value());
      EXPECT_DOUBLE_EQ(*s.steps[k].logsumexp, js["logsumexp"].get<double>());
    }
    // Full logits at the last prompt position become step 0's logits.
    EXPECT_EQ(s.steps[0].logits.size(), jc["prompt_last_logits"].size());
    const auto& hs = jc["hidden_states_last_position"];
    EXPECT_EQ(s.hidden.positions, std::vector<int>{static_cast<int>(s.prompt_ids.size()) - 1});
    ASSERT_EQ(s.hidden.layer_out.size(), hs["layer_outputs"].size());
    EXPECT_FLOAT_EQ(s.hidden.layer_out.back()[3], hs["layer_outputs"].back()[3].get<float>());
    EXPECT_EQ(s.hidden.final_norm.size(), hs["final_norm"].size());
    EXPECT_EQ(s.hidden.emb_dim, static_cast<int>(hs["final_norm"].size()));
  }
}

TEST(Records, SyntheticGoldensReadAsTheyAre) {
  const auto files = synthetic_goldens();
  ASSERT_FALSE(files.empty());
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    const auto j = load(file);
    const RecordFile rf = read_record_file(file);
    EXPECT_EQ(rf.format, j["format"].get<std::string>());
    EXPECT_EQ(rf.n_steps, j["max_new_tokens"].get<int>());
    EXPECT_EQ(rf.compute_dtype, j["reference"]["compute_dtype"].get<std::string>());
    ASSERT_EQ(rf.sequences.size(), j["sequences"].size());
    for (std::size_t i = 0; i < rf.sequences.size(); ++i) {
      const auto& js = j["sequences"][i];
      const auto& s = rf.sequences[i];
      EXPECT_EQ(s.prompt_ids, js["input_ids"].get<std::vector<int>>());
      EXPECT_FALSE(s.prompt.has_value());
      EXPECT_EQ(s.prompt_rendering, "ids");
      EXPECT_EQ(s.tokens(), js["greedy"]["tokens"].get<std::vector<int>>());
      const auto& st = js["greedy"]["steps_top5"];
      ASSERT_EQ(s.steps.size(), st.size());
      for (std::size_t k = 0; k < st.size(); ++k) {
        EXPECT_EQ(s.steps[k].top.size(), st[k]["ids"].size());
        EXPECT_EQ(s.steps[k].top.back().id, st[k]["ids"].back().get<int>());
        EXPECT_DOUBLE_EQ(*s.steps[k].logsumexp, st[k]["logsumexp"].get<double>());
      }
      EXPECT_EQ(s.steps[0].logits.size(), js["last_logits"].size());
      EXPECT_EQ(s.hidden.layer_out.size(), js["layer_hidden_last"].size());
      EXPECT_EQ(s.hidden.final_norm.size(), js["final_norm_hidden_last"].size());
    }
  }
}

TEST(Records, HandMadeHfReferenceFileIsRead) {
  // The shape tools/hf_reference.py writes (without its side file).
  const fs::path file = fs::path(LLMPORT_SOURCE_DIR) / "tests/data/verify/hf_reference_sample.json";
  const RecordFile rf = read_record_file(file);
  EXPECT_EQ(rf.format, "llmport-records/1");
  EXPECT_EQ(rf.compute_dtype, "bfloat16");
  EXPECT_TRUE(rf.independent);
  EXPECT_EQ(rf.n_steps, 3);
  ASSERT_EQ(rf.sequences.size(), 2u);
  EXPECT_EQ(rf.sequences[0].prompt_ids, (std::vector<int>{1, 403, 407, 261, 378}));
  EXPECT_EQ(rf.sequences[0].tokens(), (std::vector<int>{432, 383, 322}));
  EXPECT_EQ(rf.sequences[0].prompt_rendering, "raw");
  EXPECT_EQ(rf.sequences[1].prompt_rendering, "chat_template");
  EXPECT_EQ(rf.sequences[1].steps[1].top[1].id, 13);
  EXPECT_FLOAT_EQ(rf.sequences[1].steps[1].top[1].logit, 1.0f);
  EXPECT_DOUBLE_EQ(*rf.sequences[0].steps[2].logsumexp, 8.25);
  EXPECT_TRUE(rf.sequences[0].steps[0].logits.empty());
}

TEST(Records, OwnFormatRoundTripsThroughTheSideFile) {
  test::TempDir tmp;
  RecordFile rf;
  rf.model = "m";
  rf.producer = "unit test";
  rf.compute_dtype = "float32";
  rf.independent = false;
  rf.n_steps = 2;
  RecordSequence s;
  s.name = "p0";
  s.prompt = "hi";
  s.prompt_ids = {3, 4, 5};
  s.steps.push_back(StepRecord::from_logits(std::vector<float>{0.5f, 2.0f, -1.0f, 1.0f}, true));
  s.steps.push_back(StepRecord::from_logits(std::vector<float>{3.0f, 2.0f, 2.0f, 1.0f}, true));
  s.hidden.emb_dim = 2;
  s.hidden.positions = {0, 1, 2};
  s.hidden.embedding = {1, 2, 3, 4, 5, 6};
  s.hidden.layer_out = {{0.5f, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}};
  s.hidden.final_norm = {9, 8, 7, 6, 5, 4};
  rf.sequences.push_back(s);
  const fs::path file = tmp.path() / "rec.json";
  write_record_file(file, rf);
  EXPECT_TRUE(fs::exists(tmp.path() / "rec.safetensors"));
  const RecordFile back = read_record_file(file);
  EXPECT_FALSE(back.independent);
  ASSERT_EQ(back.sequences.size(), 1u);
  const auto& b = back.sequences[0];
  EXPECT_EQ(b.tokens(), (std::vector<int>{1, 0}));
  EXPECT_EQ(b.steps[1].logits, s.steps[1].logits);
  EXPECT_EQ(b.steps[0].top[1].id, 3);
  EXPECT_EQ(b.hidden.positions, s.hidden.positions);
  EXPECT_EQ(b.hidden.layer_out, s.hidden.layer_out);
  EXPECT_EQ(b.hidden.embedding, s.hidden.embedding);
  EXPECT_EQ(b.hidden.final_norm, s.hidden.final_norm);
}

void expect_config_error(const std::string& json, const std::string& needle) {
  test::TempDir tmp;
  const fs::path f = tmp.path() / "bad.json";
  test::write_file(f, json);
  try {
    read_record_file(f);
    ADD_FAILURE() << "no error for " << json;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
  }
}

TEST(Records, MalformedFilesNameTheFieldAtFault) {
  expect_config_error("{not json", "malformed JSON");
  expect_config_error("[1, 2]", "expected a JSON object");
  expect_config_error("{\"hello\": 1}", "not a record file");
  expect_config_error(R"({"steps": 1, "cases": [{"name": "a", "n_steps": 1, "prompt_ids": [1], "generated_ids": [2, 3],
      "steps": [{"top5": [{"id": 2, "logit": 1.0}]}]}]})",
                      "cases[0].generated_ids");
  expect_config_error(R"({"steps": 1, "cases": [{"name": "a", "prompt_ids": [1], "generated_ids": [2],
      "steps": [{"top5": [{"id": "x", "logit": 1.0}]}]}]})",
                      "cases[0].steps[0].top5[0].id: expected an integer");
  expect_config_error(R"({"format": "llmport-synthetic-golden/1", "max_new_tokens": 2,
      "sequences": [{"input_ids": [1], "greedy": {"tokens": [1], "steps_top5": []}}]})",
                      "sequences[0].greedy.tokens");
  expect_config_error(R"({"format": "llmport-records/1", "n_steps": 1, "side_file": "nope.safetensors",
      "sequences": [{"prompt_ids": [1], "tokens": [2], "steps": [{"ids": [2], "logits": [1.0]}]}]})",
                      "side file");
  expect_config_error(R"({"format": "llmport-records/2"})", "unsupported version");
  // A record one value short is the one named, whichever comes first (the width most of
  // the sequence's records have), not every record after it; both golden formats.
  expect_config_error(R"({"steps": 1, "cases": [{"name": "a", "n_steps": 1, "prompt_ids": [1], "generated_ids": [2],
      "steps": [{"top5": [{"id": 2, "logit": 1.0}]}], "hidden_states_last_position": {"embedding": [1, 2, 3],
      "layer_outputs": [[1, 2], [1, 2, 3], [1, 2, 3]], "final_norm": [1, 2, 3]}}]})",
                      "cases[0].hidden_states_last_position.layer_outputs[0]: has 2 values, expected emb_dim 3");
  expect_config_error(R"({"format": "llmport-synthetic-golden/1", "max_new_tokens": 1,
      "sequences": [{"input_ids": [1], "greedy": {"tokens": [1], "steps_top5": [{"ids": [1], "logits": [1.0]}]},
      "embedding_last": [1, 2, 3], "layer_hidden_last": [[1, 2, 3, 4], [1, 2, 3]], "final_norm_hidden_last": [1, 2, 3]}]})",
                      "sequences[0].layer_hidden_last[0]: has 4 values, expected emb_dim 3");
}

// A side file that is a FIFO: opening it for reading waited for a writer forever (verify,
// deploy and diagnosis hung); it is refused as not a regular file.
TEST(Records, ASideFileThatIsAFifoIsRefusedNotWaitedOn) {
  test::TempDir tmp;
  ASSERT_EQ(::mkfifo((tmp.path() / "side.safetensors").c_str(), 0644), 0);
  const fs::path f = tmp.path() / "g.json";
  test::write_file(f, R"({"format": "llmport-records/1", "n_steps": 1, "side_file": "side.safetensors",
      "sequences": [{"prompt_ids": [1], "tokens": [2], "steps": [{"ids": [2], "logits": [1.0]}]}]})");
  try {
    read_record_file(f);
    ADD_FAILURE() << "a FIFO side file was read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("side.safetensors: not a regular file"), std::string::npos) << e.what();
  }
}

// Half a unit in the last digit of `v` printed with `digits` significant digits.
double half_unit_sig(double v, int digits) {
  return 0.5 * std::pow(10.0, std::floor(std::log10(std::abs(v))) - digits + 1);
}

// The digits are read from the numbers, per sequence and per kind (logsumexps, logits): a
// file needs no field to say how it printed them, and one finely printed value holds its
// kind in its sequence to its precision.
TEST(Records, PrintResolutionIsReadFromTheDigitsOfTheNumbers) {
  test::TempDir t;
  const nlohmann::json stories = load(test::shared_path("models/stories260K/golden/public.json"));
  auto step_1 = [&](const nlohmann::json& j, const std::string& name, std::size_t seq = 0) {
    const fs::path f = t.path() / (name + ".json");
    std::ofstream(f) << j.dump();
    return read_record_file(f).sequences.at(seq).steps.at(1);
  };
  auto top_half_unit = [](const StepRecord& st, int digits) {
    double top = 0.0;
    for (const TopEntry& e : st.top) top = std::max(top, half_unit_sig(e.logit, digits));
    return top;
  };
  // As shipped: exact float32 values written as doubles, ~17 digits.
  EXPECT_LT(step_1(stories, "exact").print_resolution(), 1e-12);
  // "%.6g": half a unit in the sixth digit of the logsumexp plus the top logits' largest.
  const StepRecord g6 = step_1(test::reprinted_floats(stories, "%.6g"), "g6");
  EXPECT_NEAR(g6.lse_half_unit, half_unit_sig(*g6.logsumexp, 6), 1e-15);
  EXPECT_NEAR(g6.logit_half_unit, top_half_unit(g6, 6), 1e-15);
  EXPECT_GT(g6.print_resolution(), 1e-6);
  // "%.4f": half a unit in the fourth decimal, whatever the magnitude.
  EXPECT_NEAR(step_1(test::reprinted_floats(stories, "%.4f"), "f4").print_resolution(), 2 * 0.5e-4, 1e-12);
  // Logits printed "%.6g" beside logsumexps written in full (a common way to write one):
  // each kind by its own digits.
  nlohmann::json lse_full = test::reprinted_floats(stories, "%.6g");
  for (std::size_t c = 0; c < lse_full["cases"].size(); ++c)
    for (std::size_t k = 0; k < lse_full["cases"][c]["steps"].size(); ++k)
      lse_full["cases"][c]["steps"][k]["logsumexp"] = stories["cases"][c]["steps"][k]["logsumexp"];
  const StepRecord mixed_kinds = step_1(lse_full, "lse_full");
  EXPECT_LT(mixed_kinds.lse_half_unit, 1e-12);
  EXPECT_NEAR(mixed_kinds.logit_half_unit, top_half_unit(mixed_kinds, 6), 1e-15);
  // One logit of a sequence left at full precision: its logits are not widened; its
  // logsumexps, and the other sequences, keep their own digits.
  nlohmann::json one_fine = test::reprinted_floats(stories, "%.6g");
  one_fine["cases"][0]["steps"][1]["top5"][0]["logit"] = stories["cases"][0]["steps"][1]["top5"][0]["logit"];
  const StepRecord fine = step_1(one_fine, "one_fine");
  EXPECT_LT(fine.logit_half_unit, 1e-12);
  EXPECT_NEAR(fine.lse_half_unit, half_unit_sig(*fine.logsumexp, 6), 1e-15);
  EXPECT_GT(step_1(one_fine, "one_fine_1", 1).logit_half_unit, 1e-6);
  // Keys the reader does not use are not read: a stray fine "logit_note" widens nothing away.
  nlohmann::json note = test::reprinted_floats(stories, "%.6g");
  note["cases"][0]["logit_note"] = 0.123456789012;
  note["logit_offset"] = 1.234567890123e-9;
  EXPECT_NEAR(step_1(note, "note").logit_half_unit, g6.logit_half_unit, 1e-15);
  // The consistency checks allow the digits' slack and no more: a logsumexp printed "%.6g"
  // but lowered 4 resolutions beyond what the mass check allows (at the step whose top-5
  // holds the most mass) is still refused, named.
  const nlohmann::json g6j = test::reprinted_floats(stories, "%.6g");
  std::size_t best_c = 0, best_k = 0;
  double best_mass = 0.0;
  for (std::size_t c = 0; c < g6j["cases"].size(); ++c)
    for (std::size_t k = 0; k < g6j["cases"][c]["steps"].size(); ++k) {
      const auto& st = g6j["cases"][c]["steps"][k];
      double mass = 0.0;
      for (const auto& e : st["top5"]) mass += std::exp(e["logit"].get<double>() - st["logsumexp"].get<double>());
      if (mass > best_mass) best_mass = mass, best_c = c, best_k = k;
    }
  const fs::path f6 = t.path() / "g6_mass.json";
  std::ofstream(f6) << g6j.dump();
  const double r = read_record_file(f6).sequences.at(best_c).steps.at(best_k).print_resolution();
  ASSERT_GT(r, 1e-6);
  const double allowed = std::log((1.0 + 1e-4) * std::exp(r) / best_mass);  // kMassSlack
  nlohmann::json low = g6j;
  auto& lse = low["cases"][best_c]["steps"][best_k]["logsumexp"];
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", lse.get<double>() - allowed - 4 * r);
  lse = std::stod(buf);  // still 6 digits: the same resolution
  try {
    step_1(low, "lse_low");
    ADD_FAILURE() << "a logsumexp below its top logits' mass by more than its digits was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is below the logits it sums"), std::string::npos) << e.what();
  }
}

// The stories golden's derived fields (step index, position, top-1 margins) are not used by
// the verdict: one that contradicts what it derives from is said, naming the field, and the
// file is still read; digits printed short (%.4g, margins included) say nothing.
TEST(Records, StoriesDerivedFieldsThatContradictAreSaidNotRefused) {
  const nlohmann::json stories = load(test::shared_path("models/stories260K/golden/public.json"));
  test::TempDir t;
  const auto read = [&](const nlohmann::json& j, const std::string& name) {
    std::ofstream(t.path() / name) << j.dump();
    return read_record_file(t.path() / name);
  };
  EXPECT_EQ(read(stories, "honest.json").unused_field_contradictions, std::vector<std::string>{});
  EXPECT_EQ(read(test::reprinted_floats(stories, "%.4g"), "g4.json").unused_field_contradictions,
            std::vector<std::string>{});
  nlohmann::json e = stories;
  e["cases"][0]["steps"][4]["position"] = 99;
  e["cases"][0]["steps"][7]["top1_minus_top2"] = 5.0;
  e["cases"][1]["steps"][2]["step"] = 3;
  e["cases"][2]["min_top1_margin"] = 99;
  const RecordFile rf = read(e, "edited.json");
  const std::string f = (t.path() / "edited.json").string();
  const auto& c0 = stories["cases"][0];
  const auto& top = c0["steps"][7]["top5"];
  const double margin = top[0]["logit"].get<float>() - static_cast<double>(top[1]["logit"].get<float>());
  char m[32];
  std::snprintf(m, sizeof m, "%.9g", margin);
  const std::vector<std::string> want = {
      f + ": cases[0].steps[4].position: is not len(prompt_ids) - 1 + step = " +
          std::to_string(c0["prompt_ids"].size() - 1 + 4),
      f + ": cases[0].steps[7].top1_minus_top2: is not top5[0].logit - top5[1].logit = " + m,
      f + ": cases[1].steps[2].step: is not the step's index 2",
      f + ": cases[2].min_top1_margin: is not the smallest step margin top5[0].logit - top5[1].logit = "};
  ASSERT_EQ(rf.unused_field_contradictions.size(), want.size());
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(rf.unused_field_contradictions[i], want[i]);
  EXPECT_EQ(rf.unused_field_contradictions[3].rfind(want[3], 0), 0u) << rf.unused_field_contradictions[3];
  // Still read: the compared fields are the file's own.
  ASSERT_EQ(rf.sequences.size(), stories["cases"].size());
  EXPECT_EQ(rf.sequences[0].steps[7].top[0].id, top[0]["id"].get<int>());
}

// A record's JSON cannot carry a non-finite logsumexp (the reader refuses numbers beyond
// float32), so this guard of step_inconsistency is reached only by records built in memory.
TEST(Records, ANonFiniteLogsumexpIsAnInconsistency) {
  StepRecord st = StepRecord::from_logits(std::vector<float>{0.5f, 2.0f, -1.0f, 1.0f}, false);
  EXPECT_EQ(verify_detail::step_inconsistency(st), "");
  for (const double bad : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    st.logsumexp = bad;
    EXPECT_EQ(verify_detail::step_inconsistency(st), "logsumexp " + verify_detail::fmt_g(bad) + " is not finite");
  }
}

TEST(Records, MissingFileIsAConfigError) {
  test::TempDir tmp;
  EXPECT_THROW(read_record_file(tmp.path() / "missing.json"), ConfigError);
}

}  // namespace
}  // namespace llmport
