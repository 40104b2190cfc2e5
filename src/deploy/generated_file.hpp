#pragma once
// The workspace files llmport regenerates (README.md, TODO.md, ARCHITECTURE.md, Makefile,
// the timing table, the evaluation report) are llmport's, but a user may edit one anyway:
// such an edit is kept, never silently overwritten.
#include <filesystem>
#include <string>

#include "deploy/workspace.hpp"

namespace llmport::deploy {

/// Writes `text` to `file` (atomically) and records its sha256 in the workspace's
/// `.llmport-generated.json`. When `file` exists and differs from what llmport last wrote
/// there (the recorded hash), the user's version is first renamed to
/// `<file>.user-<UTC time>` and one `warning:` line on stderr says so. So is an existing
/// file that differs from `text` when the record has no usable entry for it (the record is
/// missing, unreadable, lacks the file or gives it no hash string): llmport cannot tell its
/// own text from an edit then, and the warning says the record was the reason. Throws
/// UsageError when a write fails.
void write_generated(const Workspace& ws, const std::filesystem::path& file, const std::string& text);

/// Removes a generated `file` before another process regenerates it (phase 7 removes the
/// evaluation report so that a stale one cannot be read back as the new verdict). An edited
/// file, by write_generated's rule, is renamed to `<file>.user-<UTC time>` with the same
/// warning instead of being removed. Throws UsageError when that rename fails.
void remove_generated(const Workspace& ws, const std::filesystem::path& file);

}  // namespace llmport::deploy
