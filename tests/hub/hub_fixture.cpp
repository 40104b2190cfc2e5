#include "hub/hub_fixture.hpp"

#include <algorithm>
#include <cstdlib>

namespace llmport::test {
namespace fs = std::filesystem;

const std::vector<std::string>& fetched_files() {
  static const std::vector<std::string> f = {"config.json",           "generation_config.json",
                                             "tokenizer.json",        "tokenizer_config.json",
                                             "special_tokens_map.json", "chat_template.jinja",
                                             "model.safetensors"};
  return f;
}

std::string cache_etag(const std::string& name, const std::string& content) {
  const std::string ext = ".safetensors";
  bool lfs = name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
  return lfs ? sha256_hex(content) : git_blob_sha1_hex(content);
}

void HubTest::SetUp() {
  fs::path model = shared_path("models/stories260K");
  for (const auto& e : fs::directory_iterator(model))
    if (e.is_regular_file()) files_[e.path().filename().string()] = read_file(e.path());
  ASSERT_TRUE(files_.count("config.json") && files_.count("model.safetensors"))
      << "shared stories260K lacks config.json or model.safetensors";
  hub_.add_repo(kRepo, FakeRepo{kCommit, files_, false});

  env_.set("HF_HOME", home_.path().string());
  env_.set("HF_ENDPOINT", hub_.endpoint());
  for (const char* v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                        "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS"})
    env_.set(v, std::nullopt);
  // Bounded waits, and no proxy between the client and 127.0.0.1.
  env_.set("HF_HUB_ETAG_TIMEOUT", "5");
  env_.set("HF_HUB_DOWNLOAD_TIMEOUT", "5");
  env_.set("NO_PROXY", "127.0.0.1,localhost");
  env_.set("no_proxy", "127.0.0.1,localhost");
}

fs::path HubTest::repo_dir(const std::string& repo_id) const {
  std::string folder = "models--" + repo_id;
  folder.replace(folder.find('/'), 1, "--");
  return cache_root() / folder;
}

void HubTest::populate_cache() const {
  const auto& wanted = fetched_files();
  for (const auto& [name, content] : files_) {
    if (std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
    const std::string etag = cache_etag(name, content);
    write_file(repo_dir() / "blobs" / etag, content);
    fs::create_directories(snapshot());
    fs::create_symlink(fs::path("..") / ".." / "blobs" / etag, snapshot() / name);
  }
  write_file(repo_dir() / "refs" / "main", kCommit);
}

std::vector<std::string> HubTest::blob_names(const std::string& repo_id) const {
  std::vector<std::string> out;
  fs::path dir = repo_dir(repo_id) / "blobs";
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace llmport::test
