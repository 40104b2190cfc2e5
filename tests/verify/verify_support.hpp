#pragma once
// Shared helpers of the verify integration tests.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/records.hpp"
#include "llmport/runner.hpp"
#include "llmport/verify.hpp"
#include "support/test_support.hpp"

namespace llmport::test {

inline std::filesystem::path stories_golden() { return shared_path("models/stories260K/golden/public.json"); }

/// Every synthetic model directory that has a golden.json (sorted).
inline std::vector<std::filesystem::path> synthetic_models() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(shared_path("models/synthetic")))
    if (std::filesystem::exists(e.path() / "golden.json")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// A "golden" at `out` whose every step is `runner`'s own greedy output on the first
/// `n_sequences` stories prompts, labelled as an independent numpy reference: a forgery
/// only the content check can see. prefill_path: each step is the last row of a prefill of
/// the prompt and the steps before it (one `llmport run --prompt-ids PREFIX -n 1` per
/// step), not a decode step.
inline std::filesystem::path forged_stories_golden(const std::filesystem::path& out, Runner& runner,
                                                   bool prefill_path = false, std::size_t n_sequences = SIZE_MAX) {
  const RecordFile honest = read_record_file(stories_golden());
  RecordFile rf;
  rf.model = "stories260K";
  rf.producer = "hf_llama_reference.py (independent numpy forward)";
  rf.compute_dtype = "float32";
  rf.independent = true;
  rf.n_steps = honest.n_steps;
  for (std::size_t i = 0; i < honest.sequences.size() && i < n_sequences; ++i) {
    const RecordSequence& s = honest.sequences[i];
    RecordSequence seq;
    seq.name = s.name;
    seq.prompt = s.prompt;
    seq.prompt_ids = s.prompt_ids;
    if (!prefill_path) seq.steps = generate_greedy(runner, s.prompt_ids, honest.n_steps);
    std::vector<int> ids = s.prompt_ids;
    for (int k = 0; prefill_path && k < honest.n_steps; ++k) {
      seq.steps.push_back(runner.prefill(ids).last);
      ids.push_back(seq.steps.back().token);
    }
    rf.sequences.push_back(std::move(seq));
  }
  write_record_file(out, rf);
  return out;
}

/// `j` with every floating-point number rewritten as printf(fmt) prints it ("%.6g"): a
/// reference printed with fewer digits.
inline nlohmann::json reprinted_floats(const nlohmann::json& j, const char* fmt) {
  if (j.is_object() || j.is_array()) {
    nlohmann::json out = j;
    for (auto& v : out) v = reprinted_floats(v, fmt);
    return out;
  }
  if (!j.is_number_float()) return j;
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, j.get<double>());
  return std::stod(buf);
}

/// Whether a verdict cap / a failure contains `text`.
inline bool has_cap(const VerifyResult& r, const std::string& text) {
  for (const auto& c : r.caps)
    if (c.find(text) != std::string::npos) return true;
  return false;
}
inline bool has_failure(const VerifyResult& r, const std::string& text) {
  for (const auto& f : r.failures)
    if (f.find(text) != std::string::npos) return true;
  return false;
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
