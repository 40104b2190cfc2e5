// Downloads from a fake hub into the standard HF cache layout: layout, cache reuse with
// the server gone, resume, verification, concurrency, shards.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "hub/hub_fixture.hpp"
#include "llmport/error.hpp"
#include "llmport/hub.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;

ResolveOptions quiet() {
  ResolveOptions o;
  o.quiet = true;
  return o;
}

std::vector<Hit> lfs_gets(const FakeHub& hub) {
  std::vector<Hit> out;
  for (const auto& h : hub.hits())
    if (h.method == "GET" && h.path.rfind("/lfs/", 0) == 0) out.push_back(h);
  return out;
}

TEST_F(HubTest, DownloadsByIdIntoTheHfCacheLayoutThenServesFromCacheWithServerStopped) {
  ResolvedModel r = resolve_model(kRepo, quiet());
  EXPECT_EQ(r.repo_id, kRepo);
  EXPECT_EQ(r.revision, "main");
  EXPECT_EQ(r.commit, kCommit);
  EXPECT_EQ(r.dir, snapshot());
  EXPECT_EQ(read_file(repo_dir() / "refs" / "main"), kCommit);

  // Every served file llmport fetches is a relative link to blobs/<etag> with the exact
  // bytes; the others (README.md) are not fetched.
  const auto& wanted = fetched_files();
  std::set<std::string> expect_blobs;
  for (const auto& [name, content] : files_) {
    fs::path entry = r.dir / name;
    if (std::find(wanted.begin(), wanted.end(), name) == wanted.end()) {
      EXPECT_FALSE(fs::exists(fs::symlink_status(entry))) << name;
      continue;
    }
    const std::string etag = cache_etag(name, content);
    expect_blobs.insert(etag);
    ASSERT_TRUE(fs::is_symlink(entry)) << name;
    EXPECT_EQ(fs::read_symlink(entry), fs::path("..") / ".." / "blobs" / etag) << name;
    EXPECT_EQ(read_file(entry), content) << name;
  }
  // Fetched files the repo lacks are remembered as huggingface_hub does.
  for (const auto& name : wanted) {
    if (!files_.count(name)) {
      EXPECT_TRUE(fs::exists(repo_dir() / ".no_exist" / kCommit / name)) << name;
    }
  }
  auto blobs = blob_names();
  EXPECT_EQ(std::set<std::string>(blobs.begin(), blobs.end()), expect_blobs);  // no .incomplete left
  EXPECT_EQ(lfs_gets(hub_).size(), 1u);

  hub_.stop();
  ResolvedModel again = resolve_model(kRepo, quiet());
  EXPECT_EQ(again.dir, r.dir);
  EXPECT_EQ(again.commit, kCommit);
  ScopedEnv offline("HF_HUB_OFFLINE", "1");
  EXPECT_EQ(resolve_model(kRepo, quiet()).dir, r.dir);
}

TEST_F(HubTest, InterruptedDownloadIsResumedWithARangeRequest) {
  const std::string& weights = files_.at("model.safetensors");
  const int64_t cut = static_cast<int64_t>(weights.size() / 2) + 123;
  hub_.cut_next_lfs_at = cut;
  ResolvedModel r = resolve_model(kRepo);  // not quiet: the progress / summary path runs too
  EXPECT_EQ(read_file(r.dir / "model.safetensors"), weights);
  auto gets = lfs_gets(hub_);
  ASSERT_EQ(gets.size(), 2u);
  EXPECT_EQ(gets[0].range, "");
  EXPECT_EQ(gets[1].range, "bytes=" + std::to_string(cut) + "-");
  EXPECT_EQ(hub_.lfs_bytes_sent.load(), weights.size());  // nothing sent twice
}

TEST_F(HubTest, PartialFileLeftByAnEarlierRunIsResumed) {
  const std::string& weights = files_.at("model.safetensors");
  const std::string sha = sha256_hex(weights);
  fs::create_directories(repo_dir() / "blobs");
  write_file(repo_dir() / "blobs" / (sha + ".incomplete"), weights.substr(0, 1000));
  ResolvedModel r = resolve_model(kRepo, quiet());
  EXPECT_EQ(read_file(r.dir / "model.safetensors"), weights);
  auto gets = lfs_gets(hub_);
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0].range, "bytes=1000-");
  EXPECT_EQ(hub_.lfs_bytes_sent.load(), weights.size() - 1000);
  EXPECT_FALSE(fs::exists(repo_dir() / "blobs" / (sha + ".incomplete")));
}

TEST_F(HubTest, CorruptDownloadIsRejectedAndNothingIsLeftUnderAFinalName) {
  const std::string sha = sha256_hex(files_.at("model.safetensors"));
  hub_.corrupt_lfs = true;
  try {
    resolve_model(kRepo, quiet());
    FAIL() << "a corrupt blob was accepted";
  } catch (const UsageError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sha256"), std::string::npos) << msg;
    EXPECT_NE(msg.find(sha), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(e.exit_code(), kExitBadInput);
  }
  EXPECT_FALSE(fs::exists(repo_dir() / "blobs" / sha));
  EXPECT_FALSE(fs::exists(repo_dir() / "blobs" / (sha + ".incomplete")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(snapshot() / "model.safetensors")));
  EXPECT_FALSE(fs::exists(repo_dir() / "refs" / "main"));  // no usable snapshot claimed

  hub_.corrupt_lfs = false;  // a later run downloads it anew
  EXPECT_EQ(read_file(resolve_model(kRepo, quiet()).dir / "model.safetensors"), files_.at("model.safetensors"));
}

TEST_F(HubTest, TwoConcurrentDownloadsOfOneModelBothSucceedWithOneCopy) {
  hub_.lfs_chunk_delay_ms = 20;  // the first download is still running when the second arrives
  ResolvedModel results[2];
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&, i] {
      try {
        results[i] = resolve_model(kRepo, quiet());
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(errors[i], "");
    EXPECT_EQ(results[i].dir, snapshot());
  }
  const std::string& weights = files_.at("model.safetensors");
  EXPECT_EQ(read_file(snapshot() / "model.safetensors"), weights);
  EXPECT_EQ(lfs_gets(hub_).size(), 1u);
  EXPECT_EQ(hub_.lfs_bytes_sent.load(), weights.size());
  for (const auto& b : blob_names()) EXPECT_EQ(b.find('.'), std::string::npos) << "leftover " << b;
  for (const auto& e : fs::directory_iterator(snapshot()))
    EXPECT_NE(e.path().filename().string().front(), '.') << "leftover " << e.path();
}

TEST_F(HubTest, ShardedModelFetchesTheIndexAndEveryShardItNamesOnly) {
  nlohmann::json index = {{"metadata", {{"total_size", 24}}},
                          {"weight_map",
                           {{"model.embed_tokens.weight", "model-00001-of-00002.safetensors"},
                            {"model.norm.weight", "model-00002-of-00002.safetensors"},
                            {"lm_head.weight", "model-00001-of-00002.safetensors"}}}};
  FakeRepo repo{"0123456789abcdef0123456789abcdef01234567",
                {{"config.json", files_.at("config.json")},
                 {"model.safetensors.index.json", index.dump(2)},
                 {"model-00001-of-00002.safetensors", std::string(5000, 'a')},
                 {"model-00002-of-00002.safetensors", std::string(7000, 'b')},
                 {"consolidated.safetensors", std::string(100, 'c')}},
                false};
  hub_.add_repo("llmport-test/sharded", repo);
  ResolvedModel r = resolve_model("llmport-test/sharded", quiet());
  EXPECT_EQ(r.commit, repo.commit);
  for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"})
    EXPECT_EQ(read_file(r.dir / shard), repo.files.at(shard)) << shard;
  EXPECT_FALSE(fs::exists(r.dir / "consolidated.safetensors"));
  for (const auto& h : hub_.hits()) {
    EXPECT_FALSE(h.path.size() > 18 && h.path.compare(h.path.size() - 18, 18, "/model.safetensors") == 0)
        << "asked for model.safetensors of a sharded model: " << h.path;
    EXPECT_EQ(h.path.find("consolidated"), std::string::npos) << h.path;
  }
}

TEST_F(HubTest, IndexNamingAPathOutsideTheModelIsAConfigError) {
  nlohmann::json index = {{"weight_map", {{"w", "../../../evil.safetensors"}}}};
  hub_.add_repo("llmport-test/evil", FakeRepo{"1111111111111111111111111111111111111111",
                                              {{"config.json", "{}"}, {"model.safetensors.index.json", index.dump()}},
                                              false});
  try {
    resolve_model("llmport-test/evil", quiet());
    FAIL() << "accepted a shard path outside the model";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors.index.json"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(cache_root() / "evil.safetensors"));
}

TEST_F(HubTest, CommitHashRevisionIsUsedAsIsWithoutARef) {
  ResolvedModel r = resolve_model(std::string(kRepo) + "@" + kCommit, quiet());
  EXPECT_EQ(r.dir, snapshot());
  EXPECT_EQ(r.revision, kCommit);
  EXPECT_FALSE(fs::exists(repo_dir() / "refs" / kCommit));
  hub_.stop();
  EXPECT_EQ(resolve_model(std::string(kRepo) + "@" + kCommit, quiet()).dir, snapshot());
}

TEST_F(HubTest, ConfigOnlyFetchesConfigAndGenerationConfig) {
  ResolveOptions o = quiet();
  o.config_only = true;
  ResolvedModel r = resolve_model(kRepo, o);
  EXPECT_EQ(read_file(r.dir / "config.json"), files_.at("config.json"));
  EXPECT_FALSE(fs::exists(r.dir / "model.safetensors"));
  EXPECT_TRUE(lfs_gets(hub_).empty());
  // A full resolve afterwards completes the same snapshot.
  EXPECT_EQ(read_file(resolve_model(kRepo, quiet()).dir / "model.safetensors"), files_.at("model.safetensors"));
}

TEST_F(HubTest, RenamedRepoIsFollowedThroughItsRelativeRedirect) {
  hub_.add_rename("llmport-test/old-name", kRepo);
  ResolvedModel r = resolve_model("llmport-test/old-name", quiet());
  // Cached under the id the user asked for, as huggingface_hub does.
  EXPECT_EQ(r.dir, repo_dir("llmport-test/old-name") / "snapshots" / kCommit);
  EXPECT_EQ(read_file(r.dir / "model.safetensors"), files_.at("model.safetensors"));
  EXPECT_GT(hub_.count("HEAD", "/llmport-test/old-name/resolve/"), 0);
}

TEST_F(HubTest, TokenIsNeverSentToAnotherOrigin) {
  FakeHub cdn;
  cdn.add_repo(kRepo, FakeRepo{kCommit, files_, false});
  hub_.set_lfs_origin(&cdn);
  hub_.add_repo("llmport-test/gated", FakeRepo{kCommit, files_, true});
  ScopedEnv token("HF_TOKEN", hub_.token);
  resolve_model("llmport-test/gated", quiet());
  ASSERT_FALSE(cdn.hits().empty());
  for (const auto& h : cdn.hits()) EXPECT_FALSE(h.authorized) << h.path;
  for (const auto& h : hub_.hits()) EXPECT_TRUE(h.authorized) << h.path;
}

}  // namespace
}  // namespace llmport::test
