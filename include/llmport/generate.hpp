#pragma once
// The generation loop: prefill the prompt, then decode one token at a time from the KV
// cache until a stop id or the token budget.
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "llmport/engine.hpp"
#include "llmport/sampler.hpp"

namespace llmport {

/// Options of one generation.
struct GenerateOptions {
  int n_tokens = 32;            ///< maximum number of new tokens (>= 1)
  SamplingParams sampling;      ///< greedy by default
  std::vector<int> stop_ids;    ///< stop when one of these is produced (not emitted)
  bool ignore_stop = false;     ///< always produce n_tokens (verify goldens)
  int record_top = 0;           ///< record this many top (id, logit) per step (0: none)
};

/// One generated step: the token picked and, when requested, the top logits it came from.
struct GenerationStep {
  int token = -1;
  std::vector<std::pair<int, float>> top;  ///< (id, logit), descending, ties to smaller id
};

/// Result of generate(). Times in ms; tokens/s derived by the caller.
struct GenerateResult {
  std::vector<int> prompt_ids;
  std::vector<int> generated_ids;  ///< excludes the stop token
  std::vector<GenerationStep> steps;  ///< one per sampled token, stop token included
  std::string stop_reason;         ///< "stop_id" | "n_tokens"
  double prefill_ms = 0;           ///< wall time of the prefill forward pass (ms)
  double decode_ms = 0;            ///< total wall time of the decode steps (ms)
  int n_decode = 0;                ///< decode forward passes run
};

/// Throws GateError "non-finite logits at step N (position P): ..." when `logits` ([vocab],
/// fp32) holds a NaN or Inf, and "degenerate logits at step N ..." when all of them are one
/// value (a collapsed forward pass: every id equally likely): sampling from them would emit
/// arbitrary ids. `position` is the sequence position of the token whose logits these are.
void check_finite_logits(std::span<const float> logits, int step, long position);

/// Runs prefill over `prompt` then decode steps. `on_token(id)` is called for every
/// emitted (non-stop) token as soon as it is chosen. Throws UsageError before any work when
/// the prompt is empty, n_tokens < 1, or prompt.size() + n_tokens exceeds engine.max_seq();
/// GateError (check_finite_logits) before sampling from non-finite logits.
GenerateResult generate(Engine& engine, std::span<const int> prompt, const GenerateOptions& opt,
                        const std::function<void(int)>& on_token = {});

}  // namespace llmport
