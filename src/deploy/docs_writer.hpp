#pragma once
// The workspace's human-readable files, regenerated from the manifest after every phase
// (README.md, ARCHITECTURE.md, TODO.md, Makefile, phase_timing.md) or appended to
// (progress.md, debug_log.md, LESSONS.md).
#include <string>

#include "deploy/manifest.hpp"
#include "deploy/workspace.hpp"
#include "llmport/model_config.hpp"

namespace llmport::deploy {

/// Gate descriptions of phases 0..7 (one line each).
const std::vector<std::string>& phase_gates();

void write_readme(const Workspace& ws, const Manifest& m);
void write_architecture(const Workspace& ws, const Manifest& m, const ModelConfig& cfg);
void write_todo(const Workspace& ws, const Manifest& m);
void write_makefile(const Workspace& ws, const Manifest& m);
void write_phase_timing(const Workspace& ws, const Manifest& m);
/// Creates progress.md, LESSONS.md and debug_log.md with their headers when absent.
void init_progress_files(const Workspace& ws, const Manifest& m);
/// Appends a phase outcome to progress.md (and the details of a non-PASS to debug_log.md).
void log_phase(const Workspace& ws, const PhaseResult& r);
/// Appends a dated entry to LESSONS.md: what the pipeline itself learned (a failed gate's
/// diagnosis, a tuning phase that kept the previous configs, foreign registry entries).
void append_lesson(const Workspace& ws, const std::string& text);
/// Appends one free-form line to progress.md.
void log_progress(const Workspace& ws, const std::string& line);
/// Regenerates README, ARCHITECTURE, TODO, Makefile and phase_timing from the manifest.
void write_all(const Workspace& ws, const Manifest& m, const ModelConfig& cfg);

/// The llmport command line (after `llmport`) the Makefile `run` target uses, with
/// make-variable placeholders, e.g. `run $(MODEL) --backend cpu --dtype bf16 ...`.
std::string engine_flags(const Manifest& m);

/// `s` as the workspace Makefile's text for a value its recipes use inside double quotes
/// ("$(MODEL)"): escaped for make ('$', '#') and for the shell's double quotes ('$', '`',
/// '"', '\\'), so any path reaches llmport byte for byte and runs nothing. Also right for a
/// `make VAR=...` argument. Throws UsageError for a line break (make cannot hold one).
std::string makefile_dquoted(const std::string& s);

}  // namespace llmport::deploy
