#pragma once
// Paths this build was configured with (cmake/build_paths.cpp.in, generated per build tree).

namespace llmport {

/// The source tree's data/ directory (kernel registry, prompt sets; tools/ sits beside it).
const char* build_data_dir();

}  // namespace llmport
