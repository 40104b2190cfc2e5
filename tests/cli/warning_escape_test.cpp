// Warning lines quote bytes of files a stranger wrote (a config's torch_dtype, a tensor
// name): like error lines they are escaped onto one printable line, so a model repository
// cannot move the cursor, clear the screen or forge extra output lines (issue #17).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;

TEST(WarningLines, HostileBytesAreEscapedOnOneLine) {
  const fs::path dir = fs::temp_directory_path() / ("llmport_warn_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  llmport::test::copy_stories(dir);
  auto cfg = nlohmann::json::parse(read_file(dir / "config.json"));
  cfg["torch_dtype"] = "float\x1b[2J\nwarning: forged";
  write_file(dir / "config.json", cfg.dump());
  const auto r = run_llmport({"run", dir.string(), "--prompt", "Once", "-n", "2", "-t", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("float\\x1b[2J\\nwarning: forged"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("\nwarning: forged"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace llmport::test
