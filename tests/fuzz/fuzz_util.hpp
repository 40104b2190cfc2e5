#pragma once
// Helpers of the fuzz targets (libFuzzer's LLVMFuzzerTestOneInput; replay_main.cpp drives
// them over files in builds without libFuzzer).
//
// What counts as a finding: a crash, a sanitizer report, a leak, a timeout or running out
// of memory. An llmport::Error is the expected answer to bad input; other std::exceptions
// are what the CLI also turns into one `error:` line (exit 2) — accepted here except in the
// chat-template target, whose module promises typed errors only.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace llmport::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// A private directory for this process, created once, removed at exit.
inline const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "llmport-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    static std::filesystem::path keep = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(keep, ec);
    });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

/// Writes `bytes` to work_dir()/name (replacing it) and returns the path.
inline std::filesystem::path put_file(const std::string& name, std::string_view bytes) {
  auto p = work_dir() / name;
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

/// Removes work_dir()/name if present.
inline void drop_file(const std::string& name) {
  std::error_code ec;
  std::filesystem::remove(work_dir() / name, ec);
}

}  // namespace llmport::fuzz
