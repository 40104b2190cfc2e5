#include "hub/hf_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "hub/model_id.hpp"
#include "llmport/error.hpp"

namespace llmport::hub {
namespace fs = std::filesystem;

namespace {

std::string folder_name(const std::string& repo_id) {
  std::string s = "models--" + repo_id;
  for (std::size_t p; (p = s.find('/')) != std::string::npos;) s.replace(p, 1, "--");
  return s;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// A hidden temp name next to `p`, renamed onto it when complete.
fs::path temp_sibling(const fs::path& p) {
  std::string name(".");
  name += p.filename().string();
  name += '.';
  name += unique_suffix();
  name += ".tmp";
  return p.parent_path() / name;
}

}  // namespace

void ensure_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    throw UsageError("cannot create directory " + dir.string() + ": " +
                     (ec ? ec.message() : std::string("not a directory")));
}

std::string unique_suffix() {
  static std::atomic<unsigned long> counter{0};
  std::ostringstream s;
  s << ::getpid() << "." << std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000007UL
    << "." << counter++;
  return s.str();
}

RepoCache::RepoCache(fs::path cache_root, const std::string& repo_id)
    : root_(std::move(cache_root)),
      repo_dir_(root_ / folder_name(repo_id)),
      lock_dir_(root_ / ".locks" / folder_name(repo_id)) {}

std::optional<std::string> RepoCache::commit_for(const std::string& revision) const {
  if (is_commit_hash(revision)) {
    if (fs::is_directory(snapshot_dir(revision))) return revision;
    return std::nullopt;
  }
  std::ifstream in(repo_dir_ / "refs" / revision);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string commit = trim(ss.str());
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  fs::path ref = repo_dir_ / "refs" / revision;
  ensure_dir(ref.parent_path());
  fs::path tmp = temp_sibling(ref);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << commit;
    if (!out.flush()) throw UsageError("cannot write " + ref.string() + " (disk full or read-only?)");
  }
  std::error_code ec;
  fs::rename(tmp, ref, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UsageError("cannot write " + ref.string() + ": " + ec.message());
  }
}

fs::path RepoCache::snapshot_dir(const std::string& commit) const { return repo_dir_ / "snapshots" / commit; }
fs::path RepoCache::blob_path(const std::string& etag) const { return repo_dir_ / "blobs" / etag; }
fs::path RepoCache::incomplete_path(const std::string& etag) const {
  return repo_dir_ / "blobs" / (etag + ".incomplete");
}
fs::path RepoCache::lock_path(const std::string& etag) const { return lock_dir_ / (etag + ".lock"); }

bool RepoCache::has_file(const std::string& commit, const std::string& file) const {
  std::error_code ec;
  return fs::is_regular_file(snapshot_dir(commit) / file, ec);
}

bool RepoCache::marked_missing(const std::string& commit, const std::string& file) const {
  std::error_code ec;
  return fs::exists(repo_dir_ / ".no_exist" / commit / file, ec);
}

void RepoCache::mark_missing(const std::string& commit, const std::string& file) const {
  fs::path marker = repo_dir_ / ".no_exist" / commit / file;
  ensure_dir(marker.parent_path());
  std::ofstream(marker, std::ios::app);
}

void RepoCache::link_snapshot(const std::string& commit, const std::string& file,
                              const std::string& etag) const {
  fs::path link = snapshot_dir(commit) / file;
  ensure_dir(link.parent_path());
  // Lexical, like os.path.relpath in huggingface_hub: ../../blobs/<etag> for top-level files.
  fs::path target = fs::absolute(blob_path(etag)).lexically_normal().lexically_relative(
      fs::absolute(link.parent_path()).lexically_normal());
  fs::path tmp = temp_sibling(link);
  std::error_code ec;
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw UsageError("cannot link " + link.string() + " -> " + target.string() + ": " + ec.message());
  }
}

}  // namespace llmport::hub
