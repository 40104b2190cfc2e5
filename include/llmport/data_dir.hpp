#pragma once
// Where llmport finds its shipped, read-only data: the kernel registry (registry/<target>/),
// the prompt sets (prompts/) and the Hugging Face reference script (tools/hf_reference.py).
// An installed llmport keeps them in <prefix>/share/llmport; a build-tree run uses the
// source tree's data/. Nothing is ever written there (registry entries go to a workspace
// or user_registry_dir()).
#include <filesystem>
#include <string>
#include <vector>

namespace llmport {

/// One place the data directory may be, in lookup order.
struct DataDirCandidate {
  std::filesystem::path path;
  std::string origin;  ///< "LLMPORT_DATA_DIR" | "installed" | "source tree"
};

/// The candidates, in order: $LLMPORT_DATA_DIR when set (then the only one: an explicit
/// choice is never silently replaced); <dir of /proc/self/exe>/../share/llmport (the
/// install layout's relative path); the source tree's data/ when the executable lives in
/// this build's binary directory (a build-tree run, tests included).
std::vector<DataDirCandidate> data_dir_candidates();

/// True when `dir` holds registry/ and prompts/ (what every data directory has).
bool is_data_dir(const std::filesystem::path& dir);

/// The first candidate that is_data_dir. Throws UsageError "no llmport data directory
/// (tried: A (origin), B (origin)); set LLMPORT_DATA_DIR to <prefix>/share/llmport".
DataDirCandidate find_data_dir();
/// find_data_dir().path.
std::filesystem::path data_dir();

/// The user's writable registry root: $XDG_DATA_HOME/llmport/registry, else
/// $HOME/.local/share/llmport/registry (the XDG default). Throws UsageError when neither
/// XDG_DATA_HOME nor HOME is set.
std::filesystem::path user_registry_dir();

/// Throws UsageError "<what> DIR: inside llmport's data directory D, which is read-only
/// (...)" when `dir` is, or is under, the data directory in use (installed data must stay
/// as shipped). No-op when there is no data directory.
void check_not_in_data_dir(const std::filesystem::path& dir, const std::string& what);

}  // namespace llmport
