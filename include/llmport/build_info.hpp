#pragma once
// What this build of llmport is: the facts `llmport --version` prints, for programs that
// embed the library and want to log which engine they run.
#include <string>

namespace llmport {

/// Fixed at configure time (cmake/build_info.cpp.in).
struct BuildInfo {
  std::string version;     ///< project version, e.g. "0.1.0"
  std::string git_commit;  ///< `git describe --always --dirty` of the checkout, "unknown" outside git
  std::string compiler;    ///< compiler id and version, e.g. "GNU 12.2.0"
  std::string build_type;  ///< CMAKE_BUILD_TYPE, e.g. "Release"
  bool shared = false;     ///< libllmport built as a shared library
};

BuildInfo build_info();

}  // namespace llmport
