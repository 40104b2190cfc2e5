#pragma once
// Small helpers of the deploy module: timestamps, atomic file writes, content hashes.
#include <chrono>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace llmport::deploy {

/// Current UTC time as ISO-8601 ("2026-11-29T18:09:57Z").
std::string now_iso();
/// Current UTC time for directory names ("20261129-180957").
std::string now_compact();
/// Writes `text` to `file`, replacing it (write_output_file with Overwrite::Always: a
/// temporary file of its own + rename, never a half-written file). Throws UsageError.
void atomic_write(const std::filesystem::path& file, const std::string& text);
/// Appends `text` to `file` (created when absent).
void append_file(const std::filesystem::path& file, const std::string& text);
/// Whole file as a string. Throws UsageError when unreadable.
std::string slurp(const std::filesystem::path& file);
/// SHA-256 of a file's bytes, lower-case hex. Throws UsageError when unreadable.
std::string sha256_file(const std::filesystem::path& file);
/// SHA-256 of a string, lower-case hex.
std::string sha256_string(const std::string& s);
/// Content hash of a reference file: its sha256, or, when it names a side file (records
/// with full logits, `side_file`), the sha256 of both hashes, so a swapped side file is a
/// changed reference.
std::string reference_files_sha256(const std::filesystem::path& file);

/// Before llmport clears a directory it owns (the kernel cache, a phase's registry
/// snapshot): every entry under `dir` that `ours` does not recognise (it gets the path; a
/// non-regular file is never ours) is moved, keeping its path relative to `dir`, into
/// `<dir>.user-<UTC time>[-n]` beside it, and one `warning:` line on `warn` says which and
/// where (`why`: what llmport is about to do with `dir`). Returns that directory, empty
/// when nothing was moved. Throws UsageError when an entry cannot be moved (the caller
/// must then not clear `dir`).
std::filesystem::path set_aside_unknown_files(const std::filesystem::path& dir,
                                              const std::function<bool(const std::filesystem::path&)>& ours,
                                              const std::string& why, std::ostream& warn);

/// `s` as one markdown table cell: '|' escaped as "\|" (GFM), a newline as a space, so a
/// message's "|e - r|" neither splits the row nor loses its bars.
std::string md_cell(const std::string& s);
/// md_cell undone ("\|" back to '|'), for text read back out of a generated table.
std::string md_uncell(const std::string& s);

/// Elements joined by `sep`.
std::string join(const std::vector<std::string>& v, const std::string& sep);

/// Monotonic stopwatch in seconds.
class Stopwatch {
 public:
  Stopwatch() : t0_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace llmport::deploy
