// l3_bytes_of reads a sysfs cpu tree written here on disk: one L3 shared by all CPUs counts
// once, two chiplets' L3s add up, L1/L2 entries and CPUs outside the list do not count,
// and a missing or damaged tree gives 0 instead of throwing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/cpu/cache_topology.hpp"

namespace llmport::cpu {
namespace {

namespace fs = std::filesystem;

class CacheTopology : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("llmport_sysfs_" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  // cpuN/cache/indexI with the given files (an empty value leaves the file out).
  void cache(int cpu, int index, const std::string& level, const std::string& size,
             const std::string& id, const std::string& shared = "") {
    const fs::path d = root_ / ("cpu" + std::to_string(cpu)) / "cache" / ("index" + std::to_string(index));
    fs::create_directories(d);
    auto put = [&](const char* name, const std::string& v) {
      if (!v.empty()) std::ofstream(d / name) << v << "\n";
    };
    put("level", level);
    put("size", size);
    put("id", id);
    put("shared_cpu_list", shared);
  }
  fs::path root_;
};

TEST_F(CacheTopology, OneSharedL3CountsOnce) {
  for (int c = 0; c < 2; ++c) {
    cache(c, 0, "1", "48K", std::to_string(c));
    cache(c, 2, "2", "1024K", std::to_string(c));
    cache(c, 3, "3", "32768K", "0");
  }
  const std::vector<int> cpus = {0, 1};
  EXPECT_EQ(l3_bytes_of(root_, cpus), std::size_t{32} << 20);
}

TEST_F(CacheTopology, TwoChipletsAddUpAndOnlyListedCpusCount) {
  for (int c = 0; c < 4; ++c) cache(c, 3, "3", "32M", c < 2 ? "0" : "1");
  EXPECT_EQ(l3_bytes_of(root_, std::vector<int>{0, 1, 2, 3}), std::size_t{64} << 20);
  EXPECT_EQ(l3_bytes_of(root_, std::vector<int>{2, 3}), std::size_t{32} << 20);
  EXPECT_EQ(l3_bytes_of(root_, std::vector<int>{1, 2}), std::size_t{64} << 20);
}

TEST_F(CacheTopology, WithoutIdTheSharedCpuListIsTheDomain) {
  for (int c = 0; c < 4; ++c) cache(c, 3, "3", "16384K", "", c < 2 ? "0-1" : "2-3");
  EXPECT_EQ(l3_bytes_of(root_, std::vector<int>{0, 1, 2, 3}), std::size_t{32} << 20);
}

TEST_F(CacheTopology, MissingOrDamagedTreeIsZero) {
  EXPECT_EQ(l3_bytes_of(root_ / "absent", std::vector<int>{0}), 0u);
  cache(0, 3, "3", "lots", "0");
  cache(1, 3, "", "32768K", "0");  // no level file: not known to be an L3
  EXPECT_EQ(l3_bytes_of(root_, std::vector<int>{0, 1}), 0u);
}

}  // namespace
}  // namespace llmport::cpu
