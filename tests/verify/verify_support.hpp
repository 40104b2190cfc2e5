#pragma once
// Shared helpers of the verify integration tests.
#include <filesystem>
#include <string>
#include <vector>

#include "llmport/verify.hpp"
#include "support/test_support.hpp"

namespace llmport::test {

inline std::filesystem::path stories_dir() { return shared_path("models/stories260K"); }
inline std::filesystem::path stories_golden() { return shared_path("models/stories260K/golden/public.json"); }

/// Every synthetic model directory that has a golden.json (sorted).
inline std::vector<std::filesystem::path> synthetic_models() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(shared_path("models/synthetic")))
    if (std::filesystem::exists(e.path() / "golden.json")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// verify against a golden file with the cpu backend and `dtype` ("" = checkpoint dtype).
inline VerifyResult verify_golden(const std::filesystem::path& model, const std::filesystem::path& golden,
                                  const std::string& dtype = "", const std::string& fault = "") {
  VerifyOptions o;
  o.reference = "golden:" + golden.string();
  o.engine.backend = "cpu";
  o.engine.threads = 1;
  if (!dtype.empty()) set_dtype_flag(o.engine, dtype);  // also q8_0 / q4_0
  if (!fault.empty()) o.engine.fault = FaultInjection::parse(fault);
  return run_verify(model, o);
}

}  // namespace llmport::test
