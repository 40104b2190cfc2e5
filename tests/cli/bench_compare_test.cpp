// `llmport bench --compare FILE`: llama-bench's JSON/JSONL read field for field, the best of
// its runs per (test, threads) beside llmport's figure, and damaged files as one-line
// errors naming the file and field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/bench_compare.hpp"
#include "llmport/error.hpp"
#include "support/test_support.hpp"

namespace llmport::cli {
namespace {
using test::run_llmport;
using test::shared_path;
using test::TempDir;
using test::write_file;

// Rows as llama-bench -o json prints them (fields abridged to those llmport reads plus a few
// it must ignore): pp8 twice (mmap on and off), tg4, and pp8 at another thread count.
const char* kLlamaBench = R"([
  {"build_commit": "80fb11a", "model_type": "llama ?B all F32", "n_threads": 1, "use_mmap": true,
   "n_prompt": 8, "n_gen": 0, "avg_ts": 100.0, "stddev_ts": 1.0, "samples_ts": [99, 101]},
  {"build_commit": "80fb11a", "model_type": "llama ?B all F32", "n_threads": 1, "use_mmap": false,
   "n_prompt": 8, "n_gen": 0, "avg_ts": 125.0, "stddev_ts": 1.0, "samples_ts": [124, 126]},
  {"build_commit": "80fb11a", "model_type": "llama ?B all F32", "n_threads": 1, "use_mmap": true,
   "n_prompt": 0, "n_gen": 4, "avg_ts": 50.0, "stddev_ts": 0.5, "samples_ts": [50, 50]},
  {"build_commit": "80fb11a", "model_type": "llama ?B all F32", "n_threads": 2, "use_mmap": true,
   "n_prompt": 8, "n_gen": 0, "avg_ts": 900.0, "stddev_ts": 1.0, "samples_ts": [900, 900]}
])";

TEST(BenchCompare, ReadsJsonAndJsonlAndTakesTheBestRun) {
  TempDir t;
  write_file(t.path() / "lb.json", kLlamaBench);
  const auto rows = read_llama_bench(t.path() / "lb.json");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].model_type, "llama ?B all F32");
  EXPECT_EQ(llama_bench_best(rows, 8, 0, 1), 125.0);  // the better of mmap on/off
  EXPECT_EQ(llama_bench_best(rows, 0, 4, 1), 50.0);
  EXPECT_EQ(llama_bench_best(rows, 8, 0, 2), 900.0);
  EXPECT_FALSE(llama_bench_best(rows, 16, 0, 1).has_value());
  std::string jsonl;
  for (const auto& r : nlohmann::json::parse(kLlamaBench)) jsonl += r.dump() + "\n";
  write_file(t.path() / "lb.jsonl", jsonl);
  EXPECT_EQ(read_llama_bench(t.path() / "lb.jsonl").size(), 4u);
}

// A row at KV depth > 0 (llama-bench -d) is another test than bench's depth-0 one; a file of
// two models' runs is refused, naming them (the best of both was compared before).
TEST(BenchCompare, DepthRowsAreNotMatchedAndTwoModelsAreRefused) {
  TempDir t;
  write_file(t.path() / "depth.json", R"([
    {"model_type": "llama 1B BF16", "n_threads": 1, "n_prompt": 8, "n_gen": 0, "n_depth": 0, "avg_ts": 100.0},
    {"model_type": "llama 1B BF16", "n_threads": 1, "n_prompt": 8, "n_gen": 0, "n_depth": 4096, "avg_ts": 40.0},
    {"model_type": "llama 1B BF16", "n_threads": 1, "n_prompt": 0, "n_gen": 4, "n_depth": 512, "avg_ts": 30.0}])");
  const auto rows = read_llama_bench(t.path() / "depth.json");
  EXPECT_EQ(rows[1].n_depth, 4096);
  EXPECT_EQ(llama_bench_best(rows, 8, 0, 1), 100.0);
  EXPECT_FALSE(llama_bench_best(rows, 0, 4, 1).has_value());
  write_file(t.path() / "two.json", R"([
    {"model_type": "llama 1B BF16", "n_threads": 1, "n_prompt": 8, "n_gen": 0, "avg_ts": 100.0},
    {"model_type": "qwen3 0.6B BF16", "n_threads": 1, "n_prompt": 8, "n_gen": 0, "avg_ts": 300.0}])");
  try {
    read_llama_bench(t.path() / "two.json");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--compare " + (t.path() / "two.json").string() +
                                         ": results of 2 models (model_type 'llama 1B BF16', 'qwen3 0.6B BF16'); "
                                         "give a file with this model's runs only");
  }
}

TEST(BenchCompare, DamagedFilesNameTheFileAndField) {
  TempDir t;
  struct Case {
    std::string text, says;
  };
  for (const Case& c : {Case{"not json", "line 1"}, Case{"[]", "no llama-bench results"},
                        Case{R"([{"n_prompt": 8, "n_gen": 0, "avg_ts": 1.0}])", "n_threads"},
                        Case{R"([{"n_prompt": 8, "n_gen": 0, "n_threads": 1, "avg_ts": -1}])", "avg_ts"},
                        Case{R"([{"n_prompt": 8, "n_gen": 0, "n_threads": 1, "avg_ts": "fast"}])", "avg_ts"},
                        Case{R"([{"n_prompt": 1e40, "n_gen": 0, "n_threads": 1, "avg_ts": 1}])", "n_prompt"},
                        Case{R"([{"n_prompt": 8, "n_gen": 0, "n_depth": -1, "n_threads": 1, "avg_ts": 1}])", "n_depth"},
                        Case{std::string(200, '[') + std::string(200, ']'), "deeper"},
                        // One pretty-printed object (a config.json given by mistake): read
                        // whole, so the missing field is named, not line 1 as broken JSONL.
                        Case{"{\n  \"vocab_size\": 512\n}\n", "bad.json: field 'n_prompt'"}}) {
    write_file(t.path() / "bad.json", c.text);
    try {
      read_llama_bench(t.path() / "bad.json");
      ADD_FAILURE() << "accepted: " << c.text.substr(0, 40);
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("bad.json"), std::string::npos) << what;
      EXPECT_NE(what.find(c.says), std::string::npos) << what;
    }
  }
  EXPECT_THROW(read_llama_bench(t.path() / "missing.json"), UsageError);
}

TEST(BenchCompare, BenchPrintsTheRatioBesideEachTest) {
  TempDir t;
  write_file(t.path() / "lb.json", kLlamaBench);
  const std::string model = shared_path("models/stories260K").string();
  auto r = run_llmport({"bench", model, "-p", "8", "-n", "4", "-r", "1", "-t", "1", "--no-roofline", "-o", "json",
                        "--compare", (t.path() / "lb.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0].at("llama_cpp_ts"), 125.0);
  EXPECT_DOUBLE_EQ(j[0].at("vs_llama_cpp").get<double>(), j[0].at("avg_ts").get<double>() / 125.0);
  EXPECT_EQ(j[1].at("llama_cpp_ts"), 50.0);
  auto md = run_llmport({"bench", model, "-p", "8,16", "-n", "4", "-r", "1", "-t", "1", "--no-roofline", "--compare",
                         (t.path() / "lb.json").string()});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| pp8 | 125.00 |"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| pp16 | - |"), std::string::npos) << md.out;  // llama-bench has no pp16
  // A bad file stops the run before anything is measured.
  auto bad = run_llmport({"bench", model, "--compare", (t.path() / "nope.json").string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("nope.json"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace llmport::cli
