// Integration of deploy with run/verify/hub: the Makefile's run/verify use the
// deployment's tuned registry (--registry), a tokenizer-less model deploys against the
// oracle with the built-in id prompts, --max-seq reaches the architecture gate, and the
// manifest records the HF id, revision and commit of a hub model.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hub/file_hash.hpp"
#include "llmport/verify.hpp"
#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using llmport::test::read_file;
using llmport::test::deploy_quick;
using llmport::test::run_llmport;
using llmport::test::RunResult;
using llmport::test::TempDir;
using llmport::test::write_file;
using nlohmann::json;

json load_json(const fs::path& p) { return json::parse(read_file(p)); }


// `make -C dir <args>` through the shell (paths are the test's own temp dirs); stdout+stderr.
RunResult make_in(const fs::path& dir, const std::string& args) {
  RunResult r;
  const std::string cmd = "make --no-print-directory -C '" + dir.string() + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  for (std::size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = p ? pclose(p) : -1;
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::vector<int> ints_of(const std::string& text) {
  std::istringstream ss(text);
  std::vector<int> v;
  for (int x; ss >> x;) v.push_back(x);
  return v;
}

fs::path synth(const fs::path& out, const std::string& preset) {
  auto r = run_llmport({"synth", "--preset", preset, "--out", out.string(), "--seed", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

TEST(DeployIntegration, TokenizerlessOracleDeployUsesIdPromptsAndMakeVerifyUsesTunedConfigs) {
  TempDir tmp;
  const fs::path model = synth(tmp.path() / "tiny-llama", "tiny-llama");
  ASSERT_FALSE(fs::exists(model / "tokenizer.json"));
  const fs::path ws = tmp.path() / "deployments";
  auto r = deploy_quick({model.string(), "--workspace", ws.string(), "--reference", "oracle"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path dir = ws / "tiny-llama";
  const json m = load_json(dir / "deployment.json");
  const int vocab = m["resolved_config"]["vocab_size"];
  const int context = m["resolved_config"]["max_seq"];
  const auto expected = llmport::builtin_id_prompts(vocab, context);
  ASSERT_EQ(expected.size(), 8u);
  EXPECT_EQ(expected[1].ids->size(), 1u);  // a 1-token prefill ...
  EXPECT_GT(expected[0].ids->size(), 16u);  // ... and one longer than 16
  for (const auto& p : expected)
    for (int id : *p.ids) EXPECT_TRUE(id >= 0 && id < vocab);
  EXPECT_EQ(m["first_prompt_ids"].get<std::vector<int>>(), *expected[0].ids);
  EXPECT_NE(read_file(dir / "README.md").find("built-in deterministic id prompts"), std::string::npos);

  // Phase 6 ran `make verify`: its report names the tuned registry and no heuristic shape.
  fs::path make_report;
  for (const auto& e : fs::directory_iterator(dir / "verify" / "reports")) {
    const std::string stem = e.path().filename().string();
    if (!stem.empty() && std::isdigit(static_cast<unsigned char>(stem[0]))) make_report = e.path() / "report.json";
  }
  ASSERT_FALSE(make_report.empty()) << "no `make verify` report";
  const json rep = load_json(make_report);
  EXPECT_EQ(rep["engine"]["kernel_configs"], "tuned:" + (dir / "registry").string());
  EXPECT_EQ(rep["engine"]["heuristic_default_configs"], false);
  EXPECT_EQ(rep["engine"]["kernel_selection"]["registry"], (dir / "registry").string());
  EXPECT_TRUE(rep["engine"]["kernel_selection"]["heuristic_used"].empty());
  // Every linear weight shape was served by the tuned registry: the configs phases 4-5 left
  // in use (the sweep's best when measurably faster, else the previous stage's) for prefill
  // (mr, np, kc, ...) and decode (gnp) are the ones the engine used.
  const auto& chosen = rep["engine"]["kernel_selection"]["chosen"];
  ASSERT_FALSE(chosen.empty());
  for (const char* stage : {"tuned_prefill", "tuned_decode"})
    ASSERT_FALSE(m["kernel_configs"][stage].empty()) << stage;
  std::vector<json> tuned = m["kernel_configs"]["tuned_prefill"];
  for (const auto& t : m["kernel_configs"]["tuned_decode"]) tuned.push_back(t);
  for (const auto& t : tuned) {
    const std::string key = "n=" + std::to_string(t["shape"]["n"].get<int>()) + " k=" + std::to_string(t["shape"]["k"].get<int>());
    ASSERT_TRUE(chosen.contains(key)) << key;
    for (const auto& [k, v] : t["in_use"].items()) EXPECT_EQ(chosen[key][k], v) << key << " " << k;
  }
  EXPECT_EQ(rep["prompt_set"]["name"], "ids");
  EXPECT_EQ(rep["prompt_set"]["rendering"], "ids");
  EXPECT_EQ(rep["prompts"][0]["prompt_ids"].get<std::vector<int>>(), *expected[0].ids);
  EXPECT_EQ(rep["prompts"][1]["prompt_ids"].get<std::vector<int>>(), *expected[1].ids);

  // `make run` with no PROMPT_IDS: the default id prompt, then N_TOKENS generated ids.
  auto mr = make_in(dir, "run N_TOKENS=4");
  ASSERT_EQ(mr.exit_code, 0) << mr.out;
  const auto out = ints_of(mr.out);
  ASSERT_GE(out.size(), expected[0].ids->size() + 1) << mr.out;
  EXPECT_TRUE(std::equal(expected[0].ids->begin(), expected[0].ids->end(), out.begin())) << mr.out;
  // `run --registry` reports the same tuned configs.
  auto jr = run_llmport({"run", model.string(), "--prompt-ids", "1,2,3", "-n", "2", "--threads", "1", "--json",
                         "--registry", (dir / "registry").string()});
  ASSERT_EQ(jr.exit_code, 0) << jr.err;
  const json rj = json::parse(jr.out);
  EXPECT_TRUE(rj["kernel_configs"]["heuristic_used"].empty());
  EXPECT_EQ(rj["kernel_configs"]["chosen"], chosen);
  EXPECT_EQ(run_llmport({"run", model.string(), "--prompt-ids", "1", "--registry", (tmp.path() / "nope").string()}).exit_code, 2);
}

TEST(DeployIntegration, MaxSeqReachesTheArchitectureGate) {
  TempDir tmp;
  const fs::path model = synth(tmp.path() / "tiny-mistral-sw", "tiny-mistral");
  json cfg = load_json(model / "config.json");
  cfg["sliding_window"] = 96;  // effective: max_position_embeddings is larger
  ASSERT_GT(cfg["max_position_embeddings"].get<int>(), 96);
  write_file(model / "config.json", cfg.dump(2));
  const fs::path ws = tmp.path() / "deployments";
  EXPECT_EQ(deploy_quick({model.string(), "--workspace", ws.string(), "--last-phase", "0"}).exit_code, 3);
  EXPECT_EQ(deploy_quick({model.string(), "--workspace", ws.string(), "--max-seq", "97", "--last-phase", "0"}).exit_code, 3);
  EXPECT_FALSE(fs::exists(ws / "tiny-mistral-sw"));
  auto r = deploy_quick({model.string(), "--workspace", ws.string(), "--max-seq", "96", "--last-phase", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path dir = ws / "tiny-mistral-sw";
  const json m = load_json(dir / "deployment.json");
  EXPECT_EQ(m["max_seq"], 96);
  EXPECT_EQ(m["resolved_config"]["max_seq"], 96);
  // The gate held; the default oracle reference caps it (not independent).
  EXPECT_EQ(m["phases"][3]["status"], "PASS-with-warnings");
  EXPECT_EQ(m["phases"][3]["warnings"][0], "reference not independent: oracle");
  EXPECT_NE(read_file(dir / "Makefile").find("--max-seq 96"), std::string::npos);
  // The deployment's own verify (Makefile) runs with the cap.
  auto mv = make_in(dir, "verify");
  EXPECT_EQ(mv.exit_code, 0) << mv.out;
  for (const char* target : {"run N_TOKENS=2", "diagnosis"}) {
    auto mr = make_in(dir, target);
    EXPECT_EQ(mr.exit_code, 0) << target << ": " << mr.out;
  }
}

TEST(DeployIntegration, ManifestRecordsHubIdRevisionAndCommit) {
  TempDir tmp;
  const fs::path model = synth(tmp.path() / "src", "tiny-qwen2");
  // huggingface_hub's cache layout: refs/main -> commit, snapshots/<commit>/files.
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  const fs::path cache = tmp.path() / "hub";
  const fs::path repo = cache / "models--llmport-test--tiny-qwen2";
  fs::create_directories(repo / "refs");
  write_file(repo / "refs" / "main", commit);
  fs::create_directories(repo / "snapshots");
  fs::copy(model, repo / "snapshots" / commit, fs::copy_options::recursive);
  setenv("HF_HUB_CACHE", cache.c_str(), 1);
  setenv("HF_HUB_OFFLINE", "1", 1);
  auto r = deploy_quick({"llmport-test/tiny-qwen2", "--workspace", (tmp.path() / "ws").string(), "--last-phase", "0"});
  unsetenv("HF_HUB_CACHE");
  unsetenv("HF_HUB_OFFLINE");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json m = load_json(tmp.path() / "ws" / "llmport-test_tiny-qwen2" / "deployment.json");
  EXPECT_EQ(m["model"]["repo_id"], "llmport-test/tiny-qwen2");
  EXPECT_EQ(m["model"]["revision"], "main");
  EXPECT_EQ(m["model"]["commit"], commit);
  for (const char* f : {"config.json", "model.safetensors"})
    EXPECT_EQ(m["model"]["files"][f], llmport::hub::sha256_file(model / f)) << f;
}

}  // namespace
