#pragma once
// Shared helpers of the tokenizer tests: the golden folders of $LLMPORT_SHARED/tokenizers
// (iterated, never listed by name) and a per-process cache so each tokenizer.json is
// loaded once however many tests use it.
#include <cctype>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "llmport/tokenizer.hpp"
#include "support/test_support.hpp"

namespace llmport::test {

/// Folder names under shared tokenizers/ that hold a golden.json, sorted. When the shared
/// data is missing the list holds one "<missing>" entry so that a test fails instead of
/// silently running nothing.
inline std::vector<std::string> golden_tokenizer_names() {
  namespace fs = std::filesystem;
  const char* env = std::getenv("LLMPORT_SHARED");
  fs::path root = (env && *env) ? fs::path(env) : fs::path(LLMPORT_SOURCE_DIR) / ".." / "shared";
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "tokenizers", ec))
    if (e.is_directory() && fs::exists(e.path() / "golden.json")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) names.push_back("<missing>");
  return names;
}

/// A parameterized test's name for a tokenizer folder: gtest names allow only [A-Za-z0-9_].
inline std::string tokenizer_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

/// The tokenizer of shared tokenizers/<name> (or any directory), loaded once.
inline const Tokenizer& cached_tokenizer(const std::filesystem::path& dir) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[dir.string()];
  if (!slot) slot = Tokenizer::load(dir);
  return *slot;
}

inline nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(read_file(p)); }

}  // namespace llmport::test
