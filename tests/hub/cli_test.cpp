// The llmport CLI with Hugging Face ids: a cache other tools built used in place by
// tokenize / check / run (answers checked against the stories260K golden file), downloads
// by two processes at once, and the one-line exit-2 errors.
#include <gtest/gtest.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "hub/hub_fixture.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;

nlohmann::json golden_cases() {
  auto g = nlohmann::json::parse(read_file(shared_path("models/stories260K/golden/public.json")));
  EXPECT_FALSE(g.at("cases").empty());
  return g.at("cases");
}

std::string strip_newline(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

TEST_F(HubTest, CliUsesAPrePopulatedCacheInPlaceForTokenizeCheckAndRun) {
  populate_cache();
  hub_.stop();  // nothing may be fetched
  for (const auto& c : golden_cases()) {
    const std::string prompt = c.at("prompt");
    RunResult t = run_llmport({"tokenize", kRepo, prompt});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_EQ(nlohmann::json::parse(t.out), c.at("prompt_ids")) << prompt;

    RunResult r = run_llmport({"run", kRepo, "--prompt", prompt, "-n", std::to_string(c.at("n_steps").get<int>()),
                               "--temperature", "0", "--ignore-eos", "-t", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(strip_newline(r.out), c.at("full_text").get<std::string>()) << prompt;
  }
  RunResult chk = run_llmport({"check", "--offline", kRepo});
  EXPECT_EQ(chk.exit_code, 0) << chk.err;
  EXPECT_NE(chk.out.find("ACCEPT"), std::string::npos) << chk.out;
}

TEST_F(HubTest, CliTwoProcessesDownloadingOneModelBothSucceedWithOneCopy) {
  hub_.lfs_chunk_delay_ms = 20;
  const auto c = golden_cases().at(0);
  RunResult results[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&, i] { results[i] = run_llmport({"tokenize", kRepo, c.at("prompt").get<std::string>()}); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out), c.at("prompt_ids"));
  }
  EXPECT_EQ(hub_.count("GET", "/lfs/"), 1);
  EXPECT_EQ(read_file(snapshot() / "model.safetensors"), files_.at("model.safetensors"));
  for (const auto& b : blob_names()) EXPECT_EQ(b.find('.'), std::string::npos) << "leftover " << b;
}

TEST_F(HubTest, CliGatedModelIsOneLineExit2) {
  hub_.add_repo("llmport-test/gated", FakeRepo{kCommit, files_, true});
  RunResult r = run_llmport({"check", "llmport-test/gated"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find("accept the license on the model page"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HF_TOKEN"), std::string::npos) << r.err;
}

TEST_F(HubTest, CliOfflineFlagNeverTouchesTheNetwork) {
  RunResult r = run_llmport({"tokenize", "--offline", kRepo, "hello"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("offline mode is on"), std::string::npos) << r.err;
  EXPECT_TRUE(hub_.hits().empty());
}

}  // namespace
}  // namespace llmport::test
