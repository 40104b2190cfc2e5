#pragma once
// Child processes of the pipeline (make verify in phase 6, the evaluator in phase 7).
#include <filesystem>
#include <string>
#include <vector>

namespace llmport::deploy {

/// Runs argv[0] (looked up in PATH) with `argv`, in `cwd` when non-empty, stdin from
/// /dev/null, stdout+stderr appended to `log_file`. Returns the exit status (128+signal
/// when killed). Throws UsageError when the program cannot be started.
int run_process(const std::vector<std::string>& argv, const std::filesystem::path& log_file,
                const std::filesystem::path& cwd = {});

}  // namespace llmport::deploy
