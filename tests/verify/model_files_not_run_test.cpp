// What a model's files ask transformers to run and llmport does not caps the verdict: a
// golden made without it matches llmport, and the PASS then says nothing of what a user of
// transformers gets (adversarial round of session 37: each passed plain).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "llmport/model_config.hpp"
#include "llmport/verify.hpp"
#include "support/test_support.hpp"
#include "verify/verify_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::has_cap;
using test::stories_golden;
using test::TempDir;
using test::verify_golden;

constexpr const char* kCap = "the model's files ask for what llmport does not run";

// Appends to `file` an F32 tensor `name`: a copy of `from` with rows a and b swapped.
void append_swapped_copy(const fs::path& file, const std::string& from, const std::string& name, int a, int b) {
  std::ifstream in(file, std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  json h = json::parse(raw.substr(8, n));
  std::string data = raw.substr(8 + n);
  const json& src = h.at(from);
  const auto lo = src["data_offsets"][0].get<std::size_t>(), hi = src["data_offsets"][1].get<std::size_t>();
  std::string copy = data.substr(lo, hi - lo);
  const std::size_t row = copy.size() / src["shape"][0].get<std::size_t>();
  for (std::size_t i = 0; i < row; ++i) std::swap(copy[a * row + i], copy[b * row + i]);
  h[name] = {{"dtype", "F32"}, {"shape", src["shape"]}, {"data_offsets", {data.size(), data.size() + copy.size()}}};
  std::string hb = h.dump();
  hb.append((8 - hb.size() % 8) % 8, ' ');
  const std::uint64_t hn = hb.size();
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&hn), 8);
  out << hb << data << copy;
}

// stories260K is tied; a stored lm_head.weight with the ',' and '.' rows swapped is what
// transformers v5 computes the logits from (it does not tie weights stored apart), llmport and
// the golden from the embedding.
TEST(ModelFilesNotRun, ATiedModelStoringAnotherLmHeadCapsTheVerdict) {
  TempDir t;
  const fs::path m = test::copy_stories(t.path() / "m");
  append_swapped_copy(m / "model.safetensors", "model.embed_tokens.weight", "lm_head.weight", 432, 426);
  const VerifyResult r = verify_golden(m, stories_golden());
  EXPECT_TRUE(r.pass) << r.verdict_line();
  EXPECT_TRUE(has_cap(r, kCap)) << r.verdict_line();
  EXPECT_NE(r.model_files_not_run.find("lm_head.weight differs from model.embed_tokens.weight"), std::string::npos)
      << r.model_files_not_run;
  EXPECT_EQ(verify_golden(test::stories_dir(), stories_golden()).model_files_not_run, "");
}

// auto_map naming a module that is in the directory: transformers runs it with
// trust_remote_code=True. Naming one that is not there (a config copied alone, as several
// real configs carry a stale auto_map) names nothing to run.
TEST(ModelFilesNotRun, CustomCodeTheConfigNamesCapsTheVerdictWhenItExists) {
  TempDir t;
  const fs::path m = test::copy_stories(t.path() / "m");
  json c = json::parse(test::read_file(m / "config.json"));
  c["auto_map"] = {{"AutoConfig", "configuration_custom.CustomConfig"},
                   {"AutoModelForCausalLM", "modeling_custom.CustomForCausalLM"}};
  test::write_file(m / "config.json", c.dump());
  EXPECT_TRUE(unrun_model_settings(m).empty());
  test::write_file(m / "modeling_custom.py", "# the author's forward\n");
  const std::vector<std::string> lines = unrun_model_settings(m);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("auto_map AutoModelForCausalLM names custom code (\"modeling_custom.CustomForCausalLM\")"),
            std::string::npos)
      << lines[0];
  c["auto_map"]["AutoModelForCausalLM"] = "someone/repo--modeling_x.X";  // another repository's code
  test::write_file(m / "config.json", c.dump());
  fs::remove(m / "modeling_custom.py");
  EXPECT_EQ(unrun_model_settings(m).size(), 1u);
  const VerifyResult r = verify_golden(m, stories_golden());
  EXPECT_TRUE(has_cap(r, kCap)) << r.verdict_line();
}

// Where else transformers finds custom code (round 11): tokenizer_config.json's auto_map, where
// AutoTokenizer looks first (also its legacy list form); AutoConfig's code. A class never
// read for generation (AutoModelForSequenceClassification) names nothing.
TEST(ModelFilesNotRun, CustomTokenizerAndConfigCodeCountAndOtherHeadsDoNot) {
  TempDir t;
  const fs::path m = test::copy_stories(t.path() / "m");
  test::write_file(m / "tokenization_x.py", "# a tokenizer\n");
  test::write_file(m / "configuration_x.py", "# a config\n");
  test::write_file(m / "modeling_x.py", "# a head\n");
  json c = json::parse(test::read_file(m / "config.json"));
  c["auto_map"] = {{"AutoModelForSequenceClassification", "modeling_x.XForSequenceClassification"}};
  test::write_file(m / "config.json", c.dump());
  EXPECT_TRUE(unrun_model_settings(m).empty());
  c["auto_map"]["AutoConfig"] = "configuration_x.XConfig";
  test::write_file(m / "config.json", c.dump());
  json tc = json::parse(test::read_file(m / "tokenizer_config.json"));
  tc["auto_map"] = {"tokenization_x.XTokenizer", nullptr};
  test::write_file(m / "tokenizer_config.json", tc.dump());
  const std::vector<std::string> lines = unrun_model_settings(m);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("config.json: auto_map AutoConfig names custom code"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("tokenizer_config.json: auto_map AutoTokenizer names custom code"), std::string::npos)
      << lines[1];
}

// Settings that replace greedy search (num_beams), an id 0 (`is not None` in transformers), and
// generation keys config.json holds when there is no generation_config.json
// (GenerationConfig.from_model_config).
TEST(ModelFilesNotRun, BeamSearchIdZeroAndConfigJsonGenerationKeysCount) {
  TempDir t;
  const fs::path m = test::copy_stories(t.path() / "m");
  json g = json::parse(test::read_file(m / "generation_config.json"));
  g["num_beams"] = 4;
  g["forced_eos_token_id"] = 0;
  g["guidance_scale"] = 1;  // 1: no guidance
  test::write_file(m / "generation_config.json", g.dump());
  std::vector<std::string> lines = unrun_model_settings(m);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("generation_config.json: forced_eos_token_id 0"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("generation_config.json: num_beams 4"), std::string::npos) << lines[1];
  fs::remove(m / "generation_config.json");
  json c = json::parse(test::read_file(m / "config.json"));
  c["no_repeat_ngram_size"] = 3;
  test::write_file(m / "config.json", c.dump());
  lines = unrun_model_settings(m);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("config.json: no_repeat_ngram_size 3"), std::string::npos) << lines[0];
}

// generate() suppresses these ids even greedily: ',' and '.' never come in transformers,
// while llmport's greedy text is full of them. Sampling and length defaults stay a serving
// choice (no cap).
TEST(ModelFilesNotRun, GenerationConstraintsCapTheVerdictAndSamplingDefaultsDoNot) {
  TempDir t;
  const fs::path m = test::copy_stories(t.path() / "m");
  json g = json::parse(test::read_file(m / "generation_config.json"));
  g["temperature"] = 0.7;
  g["repetition_penalty"] = 1.1;
  g["max_new_tokens"] = 40;
  g["min_length"] = 0;
  g["suppress_tokens"] = json::array();
  test::write_file(m / "generation_config.json", g.dump());
  EXPECT_TRUE(unrun_model_settings(m).empty());
  g["suppress_tokens"] = {432};
  g["bad_words_ids"] = {{426}};
  g["no_repeat_ngram_size"] = 3;
  test::write_file(m / "generation_config.json", g.dump());
  const std::vector<std::string> lines = unrun_model_settings(m);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("suppress_tokens [432]"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("bad_words_ids [[426]]"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("no_repeat_ngram_size 3"), std::string::npos) << lines[2];
  const VerifyResult r = verify_golden(m, stories_golden());
  EXPECT_TRUE(has_cap(r, kCap)) << r.verdict_line();
  // run says so too, once per setting.
  const auto run = test::run_llmport({"run", m.string(), "--prompt", "Once", "-n", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("generation_config.json: suppress_tokens [432] (transformers' generate() applies it, "
                         "greedy decoding included) (llmport does not run it)\n"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace llmport
