#pragma once
// Helpers shared by all test executables.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// The llmport binary and the source tree (tests/CMakeLists.txt generates them; the
// LLMPORT_BIN and LLMPORT_SOURCE_DIR macros call these).
extern "C" const char* llmport_test_bin();
extern "C" const char* llmport_test_source_dir();

namespace llmport::test {

/// Shared data root: $LLMPORT_SHARED, else ../shared relative to the source tree.
/// Fails the calling test (ADD_FAILURE) when missing; tests never skip on missing data.
std::filesystem::path shared_dir();
/// shared_dir()/rel, asserting it exists.
std::filesystem::path shared_path(const std::string& rel);

/// Result of running the llmport binary.
struct RunResult {
  int exit_code = -1;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};
/// Runs `llmport <args>` (no shell; args passed verbatim), optional stdin text.
RunResult run_llmport(const std::vector<std::string>& args, const std::string& stdin_text = "");
/// Runs `llmport deploy ARGS --threads 1 --quick`: the deploy tests' settings (one thread on
/// a noisy shared machine, short timing runs).
RunResult deploy_quick(const std::vector<std::string>& args, const std::string& stdin_text = "");
/// Runs `make --no-print-directory ARGS` (no shell, so paths with shell syntax stay
/// words); stdout, stderr and the exit code.
RunResult run_make(const std::vector<std::string>& args);

/// A fresh temporary directory removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Sets (or unsets, with nullopt) environment variables; restores them on destruction.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const std::string& name, const std::optional<std::string>& value) { set(name, value); }
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  void set(const std::string& name, const std::optional<std::string>& value);

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

std::string read_file(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, const std::string& data);

/// The line starting with `key` (e.g. "Rss:", "VmFlags:") in this process's
/// /proc/self/smaps entry of the mapping that contains `p`, or "" when none does.
std::string smaps_line(const void* p, const std::string& key);

/// The stories260K model directory of the shared data.
std::filesystem::path stories_dir();

/// Copies the regular files of the stories260K model (not its golden/ folder) into `dst`
/// (created). Returns dst.
std::filesystem::path copy_stories(const std::filesystem::path& dst);

/// Calls edit(value, index) on every value of the F32 tensor `name` of the safetensors
/// `file` and writes it back in place (same size, same header). Throws std::runtime_error
/// when `name` is missing or not F32.
void edit_f32_tensor(const std::filesystem::path& file, const std::string& name,
                     const std::function<void(float&, std::size_t)>& edit);

/// copy_stories, then element 0 of its F32 tensor `name` set to NaN (a damaged checkpoint
/// for the non-finite checks). Throws as edit_f32_tensor.
void copy_stories_with_nan(const std::filesystem::path& dst, const std::string& name);

}  // namespace llmport::test
