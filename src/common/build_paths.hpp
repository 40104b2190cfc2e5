#pragma once
// Paths this build was configured with (cmake/build_paths.cpp.in, generated per build tree).

namespace llmport {

/// The source tree's data/ directory (kernel registry, prompt sets; tools/ sits beside it).
const char* build_data_dir();
/// This build's binary directory: an executable under it is a build-tree run.
const char* build_binary_dir();
/// The installed data directory relative to the installed bin/ (e.g. "../share/llmport").
const char* installed_data_dir_from_bin();
/// sha256 (hex) of the reference program tools/`script` ("hf_reference.py",
/// "numpy_reference.py") this build shipped; "" for another name. Compiled in: a copy in
/// a data directory the user points at is not what was shipped, whatever it is named.
const char* shipped_script_sha256(const char* script);

}  // namespace llmport
