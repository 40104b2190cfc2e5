#pragma once
// The prompts a deployment's own phases use (phase 0 baseline, phase 2 single block,
// diagnosis, timing): the reference's first sequence, else the first prompt of
// `--prompts FILE` or of the built-in base set, tokenized. verify chooses its own set.
#include <memory>
#include <vector>

#include "deploy/phase.hpp"
#include "llmport/records.hpp"

namespace llmport::deploy {

/// The golden record file of a golden reference (read once per process), else null.
std::shared_ptr<const RecordFile> golden_records(const ReferenceSpec& ref);

/// Prompt ids of the first prompt. Throws UsageError when the model has no tokenizer and
/// neither a golden reference nor --prompts gives ids.
std::vector<int> first_prompt_ids(Context& ctx);

/// Index of the golden sequence with the longest prompt (<= 512 tokens; most positions
/// for per-position checks), 0 without a golden.
int longest_golden_sequence(const ReferenceSpec& ref);

/// `n` deterministic token ids in [0, vocab) for timing runs (content does not matter).
std::vector<int> timing_ids(int n, int vocab);

}  // namespace llmport::deploy
