#pragma once
// Fixture for hub tests: a fake hub serving stories260K (from the shared data) as
// llmport-test/stories260K, and an environment pointing HF_HOME at a temp dir and
// HF_ENDPOINT at the fake hub. Every variable touched is restored afterwards.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hub/fake_hub.hpp"
#include "support/test_support.hpp"

namespace llmport::test {

inline constexpr const char* kRepo = "llmport-test/stories260K";
inline constexpr const char* kCommit = "5f1c3c5e2b0e4c1d9a8b7c6d5e4f3a2b1c0d9e8f";

/// Files llmport fetches for a model (weights as model.safetensors).
const std::vector<std::string>& fetched_files();
/// The cache name (etag) of a file: sha256 for *.safetensors (LFS), else git blob sha1.
std::string cache_etag(const std::string& name, const std::string& content);

class HubTest : public ::testing::Test {
 protected:
  void SetUp() override;

  std::filesystem::path cache_root() const { return home_.path() / "hub"; }
  std::filesystem::path repo_dir(const std::string& repo_id = kRepo) const;
  std::filesystem::path snapshot(const std::string& commit = kCommit) const {
    return repo_dir() / "snapshots" / commit;
  }
  /// Lays the model's files out in the cache as huggingface_hub would have (blobs by
  /// etag, relative snapshot links, refs/main -> kCommit), without any server.
  void populate_cache() const;
  /// Regular files of the blobs folder of repo_dir(), by name.
  std::vector<std::string> blob_names(const std::string& repo_id = kRepo) const;

  TempDir home_;
  FakeHub hub_;
  ScopedEnv env_;
  std::map<std::string, std::string> files_;  ///< the shared model's top-level files
};

}  // namespace llmport::test
