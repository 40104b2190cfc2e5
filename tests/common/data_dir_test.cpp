// The data directory lookup (issue #19): $LLMPORT_DATA_DIR, then the install layout
// relative to the executable, then the source tree for a build-tree run; the one-line
// error naming what was tried; the user registry; the read-only guard; `--version`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "llmport/data_dir.hpp"
#include "llmport/error.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using test::ScopedEnv;

fs::path source_data() { return fs::path(LLMPORT_SOURCE_DIR) / "data"; }

TEST(DataDir, BuildTreeRunUsesTheSourceTreeAfterTheInstallLayout) {
  ScopedEnv env("LLMPORT_DATA_DIR", std::nullopt);
  const auto c = data_dir_candidates();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].origin, "installed");
  // This test binary is build/tests/test_common: the install layout is build/share/llmport.
  EXPECT_EQ(c[0].path.filename(), "llmport");
  EXPECT_EQ(c[0].path.parent_path().filename(), "share");
  EXPECT_EQ(c[1].origin, "source tree");
  EXPECT_EQ(c[1].path, source_data());
  EXPECT_EQ(find_data_dir().origin, "source tree");
  EXPECT_EQ(data_dir(), source_data());
}

TEST(DataDir, EnvironmentVariableIsTheOnlyCandidateWhenSet) {
  test::TempDir t;
  fs::create_directories(t.path() / "registry");
  fs::create_directories(t.path() / "prompts");
  ScopedEnv env("LLMPORT_DATA_DIR", t.path().string());
  ASSERT_EQ(data_dir_candidates().size(), 1u);
  EXPECT_EQ(data_dir(), t.path());
  EXPECT_EQ(find_data_dir().origin, "LLMPORT_DATA_DIR");
}

TEST(DataDir, MissingDataDirIsOneLineNamingWhatWasTried) {
  test::TempDir t;  // exists, but holds neither registry/ nor prompts/
  fs::create_directories(t.path() / "registry");
  ScopedEnv env("LLMPORT_DATA_DIR", t.path().string());
  EXPECT_FALSE(is_data_dir(t.path()));
  try {
    data_dir();
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m, "no llmport data directory (tried: " + t.path().string() +
                     " (LLMPORT_DATA_DIR)); set LLMPORT_DATA_DIR to <prefix>/share/llmport");
  }
}

TEST(DataDir, UserRegistryFollowsXdgThenHome) {
  {
    ScopedEnv x("XDG_DATA_HOME", "/xdg/data");
    EXPECT_EQ(user_registry_dir(), fs::path("/xdg/data/llmport/registry"));
  }
  ScopedEnv x("XDG_DATA_HOME", std::nullopt);
  ScopedEnv h("HOME", "/home/u");
  EXPECT_EQ(user_registry_dir(), fs::path("/home/u/.local/share/llmport/registry"));
  ScopedEnv h2("HOME", std::nullopt);
  EXPECT_THROW(user_registry_dir(), UsageError);
}

TEST(DataDir, WritesIntoTheDataDirAreRefused) {
  ScopedEnv env("LLMPORT_DATA_DIR", std::nullopt);
  try {
    check_not_in_data_dir(source_data() / "registry" / "cpu", "--registry");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--registry " + (source_data() / "registry" / "cpu").string() +
                                              ": inside llmport's data directory " + source_data().string() +
                                              ", which is read-only", 0),
              0u)
        << e.what();
  }
  test::TempDir t;
  EXPECT_NO_THROW(check_not_in_data_dir(t.path() / "registry", "--registry"));
  // A sibling whose name only starts like the data dir is not inside it.
  EXPECT_NO_THROW(check_not_in_data_dir(source_data().string() + "-copy", "--registry"));
}

TEST(DataDirCli, SweepIntoTheShippedRegistryExitsTwo) {
  ScopedEnv env("LLMPORT_DATA_DIR", std::nullopt);
  const auto r = test::run_llmport({"kernels", "sweep", test::shared_path("models/stories260K").string(), "--decode",
                                    "--registry", (source_data() / "registry" / "cpu").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("which is read-only"), std::string::npos) << r.err;
}

TEST(DataDirCli, VersionNamesBuildIsaLevelsAndDataDir) {
  ScopedEnv env("LLMPORT_DATA_DIR", std::nullopt);
  const auto r = test::run_llmport({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("llmport " LLMPORT_VERSION "\ngit commit: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\ncompiler: "), std::string::npos);
  EXPECT_NE(r.out.find("\nbuild type: "), std::string::npos);
  EXPECT_NE(r.out.find("\ncpu ISA levels built in: avx512bf16 avx512 avx2 scalar\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ndata dir: " + source_data().string() + " (source tree)\n"), std::string::npos) << r.out;
}

TEST(DataDirCli, MissingDataDirIsAnErrorForCommandsButNotForVersion) {
  test::TempDir t;
  ScopedEnv env("LLMPORT_DATA_DIR", (t.path() / "nowhere").string());
  const auto v = test::run_llmport({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("data dir: none: no llmport data directory (tried: " + (t.path() / "nowhere").string()),
            std::string::npos)
      << v.out;
  const auto r = test::run_llmport({"kernels", "list"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: no llmport data directory (tried: " + (t.path() / "nowhere").string() +
                       " (LLMPORT_DATA_DIR)); set LLMPORT_DATA_DIR to <prefix>/share/llmport\n");
}

}  // namespace
}  // namespace llmport
