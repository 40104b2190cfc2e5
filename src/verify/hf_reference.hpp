#pragma once
// The `hf` reference: runs tools/hf_reference.py (transformers, bf16) on the prompt set
// and returns the record file it wrote.
#include <filesystem>
#include <string>
#include <vector>

#include "llmport/verify.hpp"

namespace llmport::verify_detail {

/// Path of tools/hf_reference.py: $LLMPORT_HF_REFERENCE when set, else the source tree's.
std::filesystem::path hf_reference_script();

/// Runs the script with `python` on `prompts` (texts are tokenized by transformers; chat
/// renders them with the tokenizer's chat template) and writes `out` (llmport-records/1).
/// Throws UsageError when python, torch or transformers is missing, or the script fails.
void run_hf_reference(const std::string& python, const std::filesystem::path& model_dir,
                      const std::vector<PromptSpec>& prompts, bool chat, int n_steps,
                      const std::filesystem::path& out);

}  // namespace llmport::verify_detail
