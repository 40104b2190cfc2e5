// The forward pass reads top to bottom (issue #14): src/runtime/engine.cpp holds the math
// alone; instrumentation lives in backend decorators, and the forward function stays short.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "support/test_support.hpp"

namespace llmport::test {
namespace {

std::string read_source(const std::string& rel) {
  std::ifstream in(std::string(LLMPORT_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(in) << rel;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(EngineStructure, ForwardPassFileHasNoInstrumentation) {
  const std::string src = read_source("src/runtime/engine.cpp");
  ASSERT_FALSE(src.empty());
  std::istringstream lines(src);
  std::string line;
  int n = 0, hits = 0;
  const std::regex banned("fault|profil|probe");
  while (std::getline(lines, line)) {
    ++n;
    if (std::regex_search(line, banned)) {
      ++hits;
      ADD_FAILURE() << "engine.cpp:" << n << ": " << line;
    }
    EXPECT_EQ(line.rfind("#if", 0), std::string::npos) << "engine.cpp:" << n << ": " << line;
  }
  EXPECT_EQ(hits, 0);
}

TEST(EngineStructure, ForwardIsAtMostSeventyLines) {
  const std::string src = read_source("src/runtime/engine.cpp");
  const auto start = src.find("std::vector<float> Engine::Impl::forward(");
  ASSERT_NE(start, std::string::npos);
  const auto end = src.find("\n}\n", start);
  ASSERT_NE(end, std::string::npos);
  const long lines = std::count(src.begin() + static_cast<long>(start),
                                src.begin() + static_cast<long>(end) + 2, '\n') + 1;
  EXPECT_LE(lines, 70);
  EXPECT_GE(lines, 10);  // found the function, not a declaration
}

}  // namespace
}  // namespace llmport::test
