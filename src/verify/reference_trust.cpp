// What a verify verdict may claim about its reference: provenance (who the file says
// produced it), content (whether it is llmport's own output copied), the KL bound the
// run's dtypes allow, and the verdict line with its caps. Rules: docs/verification.md.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <set>

#include "llmport/error.hpp"
#include "llmport/verify.hpp"

namespace llmport {

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}
bool same_bits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }
}  // namespace

double kl_bound_for(DType engine_dtype, const std::string& reference_dtype) {
  const std::string r = lower(reference_dtype);
  const bool reference_low = r.find("bf16") != std::string::npos || r.find("bfloat16") != std::string::npos ||
                             r.find("fp16") != std::string::npos || r.find("float16") != std::string::npos ||
                             r == "half";
  return engine_dtype == DType::F32 && !reference_low ? kKlBoundFp32 : kKlBoundBf16;
}

KldGate kld_gate_defaults(QuantType quant) {
  switch (quant) {
    case QuantType::Q8_0: return {2e-3, 0.97};
    case QuantType::Q4_0: return {0.15, 0.78};
    case QuantType::None: break;
  }
  throw UsageError("the KLD gate is for quantized dtypes (q8_0, q4_0) only");
}

namespace {
// The producer as letters and digits only, look-alike digits read as letters: "LLM-P0rt",
// "llm\u200bport" and "l l m p o r t" all read "llmport".
std::string letters_of(const std::string& s) {
  std::string out;
  for (unsigned char c : lower(s)) {
    if (c == '0') out += 'o';
    else if (c == '1') out += 'l';
    else if (std::isalnum(c)) out += static_cast<char>(c);
  }
  return out;
}
}  // namespace

ReferenceProvenance assess_provenance(const RecordFile& rf) {
  ReferenceProvenance p;
  p.producer = rf.producer;
  if (letters_of(rf.producer).empty())
    p.finding = "no provenance: " + rf.path.filename().string() + " names no producer";
  else if (letters_of(rf.producer).find("llmport") != std::string::npos)
    p.finding = "provenance: produced by llmport (" + rf.producer + ")";
  else if (!rf.independent)
    p.finding = "provenance: " + rf.path.filename().string() + " says \"independent\": false";
  p.independent = p.finding.empty();
  return p;
}

void count_self_match(const StepRecord& reference, std::span<const float> logits, SelfMatch& m, int k) {
  const std::size_t n = std::min<std::size_t>(reference.top.size(), static_cast<std::size_t>(std::max(k, 0)));
  for (std::size_t i = 0; i < n; ++i) {
    const TopEntry& e = reference.top[i];
    if (e.id < 0 || static_cast<std::size_t>(e.id) >= logits.size()) continue;
    m.identical += same_bits(e.logit, logits[static_cast<std::size_t>(e.id)]) ? 1 : 0;
    ++m.compared;
  }
}

int VerifyResult::distinct_prompts() const {
  std::set<std::vector<int>> ids;
  for (const auto& p : prompts) ids.insert(p.prompt_ids);
  return static_cast<int>(ids.size());
}

std::string VerifyResult::verdict() const {
  if (!pass) return "FAIL";
  return caps.empty() ? "PASS" : "PASS-with-warnings";
}

std::string VerifyResult::verdict_line() const {
  std::string v = verdict();
  if (v != "PASS-with-warnings") return v;
  v += " (";
  for (std::size_t i = 0; i < caps.size(); ++i) v += (i ? "; " : "") + caps[i];
  return v + ")";
}

}  // namespace llmport
