// The HF cache used in place (a cache other tools built), the environment the way
// huggingface_hub reads it, model id parsing, local paths.
#include <gtest/gtest.h>

#include "hub/hub_env.hpp"
#include "hub/hub_fixture.hpp"
#include "hub/model_id.hpp"
#include "llmport/error.hpp"
#include "llmport/hub.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;

TEST_F(HubTest, PrePopulatedCacheIsUsedInPlaceWithoutTheNetwork) {
  populate_cache();
  ResolvedModel r = resolve_model(kRepo);
  EXPECT_EQ(r.dir, snapshot());
  EXPECT_EQ(r.commit, kCommit);
  // In place: the snapshot entries are the blobs, nothing was copied.
  const std::string sha = sha256_hex(files_.at("model.safetensors"));
  EXPECT_TRUE(fs::equivalent(r.dir / "model.safetensors", repo_dir() / "blobs" / sha));
  EXPECT_TRUE(hub_.hits().empty());
}

TEST_F(HubTest, CacheLocationFollowsHfHubCacheThenHfHome) {
  EXPECT_EQ(hub::read_hub_env().cache_root, home_.path() / "hub");
  ScopedEnv c("HF_HUB_CACHE", (home_.path() / "elsewhere").string());
  EXPECT_EQ(hub::read_hub_env().cache_root, home_.path() / "elsewhere");
  ScopedEnv h("HF_HOME", std::nullopt);
  ScopedEnv x("XDG_CACHE_HOME", (home_.path() / "xdg").string());
  ScopedEnv c2("HF_HUB_CACHE", std::nullopt);
  EXPECT_EQ(hub::read_hub_env().cache_root, home_.path() / "xdg" / "huggingface" / "hub");
  EXPECT_EQ(hub::read_hub_env().token_file, home_.path() / "xdg" / "huggingface" / "token");
}

TEST_F(HubTest, TokenComesFromHfTokenBeforeTheTokenFile) {
  EXPECT_FALSE(hub::read_hub_env().token.has_value());
  write_file(home_.path() / "token", "  hf_from_file\n");
  EXPECT_EQ(hub::read_hub_env().token.value_or(""), "hf_from_file");
  ScopedEnv t("HF_TOKEN", "hf_from_env");
  EXPECT_EQ(hub::read_hub_env().token.value_or(""), "hf_from_env");
}

TEST(HubEnv, OfflineAcceptsTheSpellingsHuggingfaceHubAccepts) {
  for (const char* on : {"1", "ON", "yes", "True"}) {
    ScopedEnv e("HF_HUB_OFFLINE", on);
    EXPECT_TRUE(hub::read_hub_env().offline) << on;
  }
  for (const char* off : {"0", "false", "no", ""}) {
    ScopedEnv e("HF_HUB_OFFLINE", off);
    EXPECT_FALSE(hub::read_hub_env().offline) << off;
  }
  ScopedEnv ep("HF_ENDPOINT", "https://hub.example.org/");
  EXPECT_EQ(hub::read_hub_env().endpoint, "https://hub.example.org");
  ScopedEnv ep2("HF_ENDPOINT", std::nullopt);
  EXPECT_EQ(hub::read_hub_env().endpoint, "https://huggingface.co");
}

TEST(ModelId, ParsesOrgNameAndRevision) {
  auto a = hub::parse_model_id("Qwen/Qwen3-0.6B");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->repo_id, "Qwen/Qwen3-0.6B");
  EXPECT_EQ(a->revision, "main");
  auto b = hub::parse_model_id("meta-llama/Llama-3.2-1B@refs/pr/12");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->repo_id, "meta-llama/Llama-3.2-1B");
  EXPECT_EQ(b->revision, "refs/pr/12");
  for (const char* bad : {"gpt2", "a/b/c", "org/name@", "org/name@../../x", "-org/name", "org/name.", "org/a--b",
                          "org/a..b", "/abs/path", "org /name"})
    EXPECT_FALSE(hub::parse_model_id(bad)) << bad;
  EXPECT_TRUE(hub::is_commit_hash(kCommit));
  EXPECT_FALSE(hub::is_commit_hash("main"));
}

TEST(ResolveLocal, ExistingDirectoryOrConfigPathIsReturnedAsIs) {
  fs::path dir = shared_path("models/stories260K");
  ResolvedModel r = resolve_model(dir.string());
  EXPECT_EQ(r.dir, dir);
  EXPECT_EQ(r.repo_id, "");
  EXPECT_EQ(resolve_model((dir / "config.json").string()).dir, dir / "config.json");
}

}  // namespace
}  // namespace llmport::test
