// Failures a user can act on: gated (401), unknown id/revision (404), offline, no network,
// disk full. Each is one line, exit 2, and leaves nothing under a final cache name.
#include <gtest/gtest.h>

#include "hub/hub_fixture.hpp"
#include "llmport/error.hpp"
#include "llmport/hub.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;

ResolveOptions quiet_options() {
  ResolveOptions o;
  o.quiet = true;
  return o;
}

// The one-line message of the UsageError resolve_model throws (exit 2).
std::string usage_error(const std::string& model, const ResolveOptions& opt = quiet_options()) {
  try {
    resolve_model(model, opt);
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), kExitBadInput);
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "resolve_model(" << model << ") did not throw UsageError";
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_F(HubTest, GatedModelGets401MessageThenDownloadsWithHfTokenOrTheLoginTokenFile) {
  const std::string gated = "llmport-test/gated";
  hub_.add_repo(gated, FakeRepo{kCommit, files_, true});
  std::string msg = usage_error(gated);
  EXPECT_TRUE(contains(msg, "gated")) << msg;
  EXPECT_TRUE(contains(msg, "HTTP 401")) << msg;
  EXPECT_TRUE(contains(msg, "accept the license on the model page")) << msg;
  EXPECT_TRUE(contains(msg, hub_.endpoint() + "/" + gated)) << msg;
  EXPECT_TRUE(contains(msg, "set HF_TOKEN")) << msg;
  EXPECT_FALSE(fs::exists(repo_dir(gated) / "snapshots"));

  {
    ScopedEnv wrong("HF_TOKEN", "hf_wrong");
    msg = usage_error(gated);
    EXPECT_TRUE(contains(msg, "was sent but has no access")) << msg;
  }
  {
    ScopedEnv right("HF_TOKEN", hub_.token);
    ScopedEnv cache("HF_HUB_CACHE", (home_.path() / "c1").string());
    ResolvedModel r = resolve_model(gated, quiet_options());
    EXPECT_EQ(read_file(r.dir / "config.json"), files_.at("config.json"));
  }
  // `huggingface-cli login` writes $HF_HOME/token.
  write_file(home_.path() / "token", hub_.token + "\n");
  ScopedEnv cache("HF_HUB_CACHE", (home_.path() / "c2").string());
  ResolvedModel r = resolve_model(gated, quiet_options());
  EXPECT_EQ(read_file(r.dir / "model.safetensors"), files_.at("model.safetensors"));
}

TEST_F(HubTest, UnknownModelAndUnknownRevisionGive404Messages) {
  std::string msg = usage_error("llmport-test/no-such-model");
  EXPECT_TRUE(contains(msg, "'llmport-test/no-such-model' not found")) << msg;
  EXPECT_TRUE(contains(msg, "HTTP 404")) << msg;
  msg = usage_error(std::string(kRepo) + "@v9.9");
  EXPECT_TRUE(contains(msg, "revision 'v9.9' not found")) << msg;
  EXPECT_TRUE(contains(msg, kRepo)) << msg;
  // A server without X-Error-Code headers: the status alone still explains it.
  hub_.send_error_codes = false;
  msg = usage_error("llmport-test/no-such-model");
  EXPECT_TRUE(contains(msg, "unknown model id or revision")) << msg;
  hub_.add_repo("llmport-test/gated", FakeRepo{kCommit, files_, true});
  msg = usage_error("llmport-test/gated");
  EXPECT_TRUE(contains(msg, "accept the license on the model page")) << msg;
  EXPECT_FALSE(fs::exists(repo_dir("llmport-test/no-such-model") / "snapshots"));
}

TEST_F(HubTest, RepoWithoutSafetensorsIsAClearError) {
  hub_.add_repo("llmport-test/bin-only", FakeRepo{"2222222222222222222222222222222222222222",
                                                  {{"config.json", "{}"}, {"pytorch_model.bin", "x"}},
                                                  false});
  std::string msg = usage_error("llmport-test/bin-only");
  EXPECT_TRUE(contains(msg, "neither model.safetensors nor model.safetensors.index.json")) << msg;
}

TEST_F(HubTest, OfflineNeverTouchesTheNetworkAndNamesWhatIsMissing) {
  {
    ScopedEnv offline("HF_HUB_OFFLINE", "1");
    std::string msg = usage_error(kRepo);
    EXPECT_TRUE(contains(msg, "not in the Hugging Face cache")) << msg;
    EXPECT_TRUE(contains(msg, "HF_HUB_OFFLINE=1")) << msg;
    EXPECT_TRUE(contains(msg, kRepo)) << msg;
  }
  ResolveOptions opt = quiet_options();
  opt.offline = true;
  EXPECT_TRUE(contains(usage_error(kRepo, opt), "offline mode is on"));
  EXPECT_TRUE(hub_.hits().empty());

  // A snapshot holding only config.json: the missing weights are named.
  ResolveOptions cfg = quiet_options();
  cfg.config_only = true;
  resolve_model(kRepo, cfg);
  const size_t hits = hub_.hits().size();
  std::string msg = usage_error(kRepo, opt);
  EXPECT_TRUE(contains(msg, "lacks model.safetensors")) << msg;
  EXPECT_EQ(hub_.hits().size(), hits);
}

TEST_F(HubTest, NoNetworkIsAnActionableError) {
  hub_.stop();
  std::string msg = usage_error(kRepo);
  EXPECT_TRUE(contains(msg, "cannot reach the Hugging Face hub at " + hub_.endpoint())) << msg;
  EXPECT_TRUE(contains(msg, "HF_HUB_OFFLINE=1")) << msg;
  EXPECT_FALSE(fs::exists(repo_dir() / "snapshots"));
}

TEST_F(HubTest, DiskFullIsAnActionableErrorWithNothingUnderTheFinalName) {
  // /dev/full fails every write with ENOSPC: stand it in for the partial download.
  ASSERT_TRUE(fs::exists("/dev/full"));
  const std::string sha = sha256_hex(files_.at("model.safetensors"));
  fs::create_directories(repo_dir() / "blobs");
  fs::create_symlink("/dev/full", repo_dir() / "blobs" / (sha + ".incomplete"));
  std::string msg = usage_error(kRepo);
  EXPECT_TRUE(contains(msg, "disk full")) << msg;
  EXPECT_TRUE(contains(msg, cache_root().string())) << msg;
  EXPECT_FALSE(fs::exists(repo_dir() / "blobs" / sha));
  EXPECT_FALSE(fs::exists(fs::symlink_status(snapshot() / "model.safetensors")));
  EXPECT_FALSE(fs::exists(repo_dir() / "refs" / "main"));
}

TEST_F(HubTest, PathThatIsNeitherAFileNorAnIdIsAUsageError) {
  for (const std::string bad : {"no/such/dir", "./missing-model", "org/name@", "-org/name", "org/na--me"}) {
    std::string msg = usage_error(bad);
    EXPECT_TRUE(contains(msg, "not found")) << bad << ": " << msg;
  }
  EXPECT_TRUE(hub_.hits().empty());
}

}  // namespace
}  // namespace llmport::test
