#pragma once
// Paths this build was configured with (cmake/build_paths.cpp.in, generated per build tree).

namespace llmport {

/// The source tree's data/ directory (kernel registry, prompt sets; tools/ sits beside it).
const char* build_data_dir();
/// This build's binary directory: an executable under it is a build-tree run.
const char* build_binary_dir();
/// The installed data directory relative to the installed bin/ (e.g. "../share/llmport").
const char* installed_data_dir_from_bin();

}  // namespace llmport
