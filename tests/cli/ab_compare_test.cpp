// bench/ab_compare.py, the interleaved A/B bench of two binaries: its bootstrap interval is
// the C++ ratio_of_medians_interval's, number for number, and a run with the same binary as
// old and new pairs every repetition and prints one row per test.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include "deploy/timing.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {

struct Shell {
  int exit_code = -1;
  std::string out;
};

// Runs a shell command, capturing stdout (stderr goes to the test log).
Shell shell(const std::string& cmd) {
  Shell r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string script() { return std::string(LLMPORT_SOURCE_DIR) + "/bench/ab_compare.py"; }

std::string csv(const std::vector<double>& v) {
  std::ostringstream s;
  s.precision(17);
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  return s.str();
}

TEST(AbCompare, IntervalIsTheCppFunctions) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {{10.0, 11.0, 9.5, 10.2, 10.8, 9.9}, {10.1, 10.4, 9.7, 10.0, 11.3, 9.8}},
      {{512.3, 498.1, 530.7, 505.5, 520.0, 509.9, 515.2, 501.1, 499.9},
       {480.2, 470.9, 495.5, 488.8, 479.1, 500.3, 482.2, 476.0, 490.4}},
      {{3.0}, {3.3}},
  };
  for (const auto& [old_ms, new_ms] : cases) {
    const deploy::RatioInterval want = deploy::ratio_of_medians_interval(old_ms, new_ms);
    const Shell r = shell("python3 " + script() + " interval " + csv(old_ms) + " " + csv(new_ms));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::istringstream in(r.out);
    double ratio = 0, low = 0, high = 0;
    ASSERT_TRUE(in >> ratio >> low >> high) << r.out;
    EXPECT_DOUBLE_EQ(ratio, want.ratio);
    EXPECT_DOUBLE_EQ(low, want.low);
    EXPECT_DOUBLE_EQ(high, want.high);
  }
}

TEST(AbCompare, SameBinaryTwicePairsEveryRepetition) {
  const std::string bin = LLMPORT_BIN;
  const std::string model = shared_path("models/stories260K").string();
  const Shell r = shell("python3 " + script() + " --old " + bin + " --new " + bin + " --model " + model +
                        " --rounds 2 -- -p 16 -n 8 -r 2 -t 1 --no-roofline");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("| model | test | old median ms | new median ms | new/old | 95% interval | pairs |"),
            std::string::npos)
      << r.out;
  // 2 rounds x 2 repetitions = 4 pairs per test.
  EXPECT_NE(r.out.find("| stories260K | pp16 | "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| stories260K | tg8 | "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("] | 4 |"), std::string::npos) << r.out;
}

TEST(AbCompare, RefusesAnOutputFlagItMustSetItself) {
  const std::string bin = LLMPORT_BIN;
  const Shell r = shell("python3 " + script() + " --old " + bin + " --new " + bin + " --model x -- -o md 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("-o: the script sets the output"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace llmport::test
