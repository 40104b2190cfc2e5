#include "llmport/data_dir.hpp"

#include <cstdlib>
#include <system_error>

#include "common/build_paths.hpp"
#include "llmport/error.hpp"

namespace llmport {
namespace fs = std::filesystem;

namespace {

fs::path self_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p;
}

// `p` equals `root` or lies below it (both made absolute and normal, symlinks resolved
// where they exist, so a build dir reached through a link still counts).
bool is_within(const fs::path& p, const fs::path& root) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(p, ec);
  const fs::path b = fs::weakly_canonical(root, ec);
  if (ec || b.empty()) return false;
  const fs::path rel = a.lexically_relative(b);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

std::vector<DataDirCandidate> data_dir_candidates() {
  if (const char* env = std::getenv("LLMPORT_DATA_DIR"); env && *env) return {{fs::path(env), "LLMPORT_DATA_DIR"}};
  std::vector<DataDirCandidate> out;
  const fs::path exe = self_exe();
  if (!exe.empty()) out.push_back({(exe.parent_path() / installed_data_dir_from_bin()).lexically_normal(), "installed"});
  // Only a binary of this build tree may read the checkout: an installed copy that did so
  // would silently depend on a source tree that the package does not carry.
  if (!exe.empty() && is_within(exe, build_binary_dir())) out.push_back({fs::path(build_data_dir()), "source tree"});
  return out;
}

bool is_data_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "registry", ec) && fs::is_directory(dir / "prompts", ec);
}

DataDirCandidate find_data_dir() {
  const auto cands = data_dir_candidates();
  std::string tried;
  for (const auto& c : cands) {
    if (is_data_dir(c.path)) return c;
    tried += (tried.empty() ? "" : ", ") + c.path.string() + " (" + c.origin + ")";
  }
  throw UsageError("no llmport data directory (tried: " + (tried.empty() ? std::string("nothing") : tried) +
                   "); set LLMPORT_DATA_DIR to <prefix>/share/llmport");
}

fs::path data_dir() { return find_data_dir().path; }

fs::path user_registry_dir() {
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return fs::path(x) / "llmport" / "registry";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".local" / "share" / "llmport" / "registry";
  throw UsageError("neither XDG_DATA_HOME nor HOME is set: no user registry directory; pass --registry DIR");
}

void check_not_in_data_dir(const fs::path& dir, const std::string& what) {
  for (const auto& c : data_dir_candidates())
    if (is_data_dir(c.path)) {
      if (is_within(dir, c.path))
        throw UsageError(what + " " + dir.string() + ": inside llmport's data directory " + c.path.string() +
                         ", which is read-only (write registry entries to a workspace or " +
                         "$XDG_DATA_HOME/llmport/registry)");
      return;
    }
}

}  // namespace llmport
