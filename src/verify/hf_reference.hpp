#pragma once
// The `hf` reference: runs tools/hf_reference.py (transformers, bf16) on the prompt set
// and returns the record file it wrote.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/verify.hpp"

namespace llmport::verify_detail {

/// The shipped tools/hf_reference.py (under this build's data directory's parent).
std::filesystem::path shipped_hf_reference_script();
/// Path of the program that runs: $LLMPORT_HF_REFERENCE when set, else the shipped one.
std::filesystem::path hf_reference_script();

/// Runs the script with `python` on `prompts` (texts are tokenized by transformers; chat
/// renders them with the tokenizer's chat template) and writes `out` (llmport-records/1).
/// Returns what ran: {"program": path, "sha256": hex, "shipped": whether its bytes are the
/// shipped script's, "python": interpreter}. Throws UsageError when python, torch or
/// transformers is missing, or the script fails.
/// `torch_dtype`: the precision transformers computes in ("float32" for an fp32 engine, so
/// the fp32 KL bound can hold; "" = the script's default, bfloat16).
nlohmann::json run_hf_reference(const std::string& python, const std::filesystem::path& model_dir,
                                const std::vector<PromptSpec>& prompts, bool chat, int n_steps,
                                const std::filesystem::path& out, const std::string& torch_dtype = "");

}  // namespace llmport::verify_detail
