#pragma once
// `llmport perplexity`: perplexity of a model over a text, by llama.cpp's
// tools/perplexity method, and the KL-divergence statistics of one run against a saved
// base run (how quantization is judged).
//
// Method (llama-perplexity, exactly): tokenize the whole text once with the tokenizer's
// special tokens; split it into non-overlapping chunks of ctx tokens (a shorter tail is
// dropped); set each chunk's first token to BOS when the tokenizer adds one; run each chunk
// as one prefill from an empty KV cache and score positions ctx/2 .. ctx-2, each predicting
// the next token: nll_i = -log softmax(logits_i)[token_{i+1}]. PPL = exp(mean nll) with the
// error PPL * sqrt((mean(nll^2) - mean(nll)^2) / (n - 1)) (llama-perplexity's estimate).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/engine.hpp"

namespace llmport {

/// Options of one perplexity run.
struct PerplexityOptions {
  EngineOptions engine;  ///< backend, dtype, threads of the engine (max_seq is set to ctx)
  int ctx = 0;           ///< chunk length in tokens; 0 = min(512, the model's context)
  /// When set, every scored position's log-probabilities are written there (format below).
  std::optional<std::filesystem::path> save_logits;
  /// When set, a file written by save_logits of a base run over the same text, ctx and
  /// vocab: adds the KL-divergence statistics of this run against it.
  std::optional<std::filesystem::path> kl_base;
  /// Called after each chunk with (chunk index from 1, chunks, running PPL); may be empty.
  std::function<void(int, int, double)> progress;
};

/// KL divergence of this run (Q) against the base run (P), over the scored positions.
/// Each `*_unc` is llama-perplexity's uncertainty of the figure beside it: for a mean of
/// per-position values x, sqrt((mean(x^2) - mean(x)^2) / (n - 1)) (0 for n <= 10); for
/// same_top1, sqrt(p (1 - p) / (n - 1)); for rms_dp, 0.5 / rms_dp times the uncertainty of
/// mean(dp^2); for ln_ppl_ratio, that of mean(nll_Q - nll_P).
struct KlStats {
  std::string base_label;      ///< e.g. "llmport fp32 (not independent)"
  double mean = 0, median = 0, p99 = 0, max = 0;  ///< KL(P || Q) per position, nats
  double mean_unc = 0;
  double same_top1 = 0;        ///< share of positions whose argmax agrees, 0..1
  double same_top1_unc = 0;
  double mean_dp = 0;          ///< mean of p_Q(correct) - p_P(correct)
  double mean_dp_unc = 0;
  double rms_dp = 0;           ///< RMS of the same
  double rms_dp_unc = 0;
  double base_ppl = 0;
  double ppl_ratio = 0;        ///< PPL(this) / PPL(base)
  double ln_ppl_ratio = 0;     ///< mean(nll_Q - nll_P) = ln(PPL(this) / PPL(base))
  double ln_ppl_ratio_unc = 0;
};

/// Result of one run.
struct PerplexityResult {
  std::string model;
  std::string dtype;
  int ctx = 0;
  int64_t n_tokens = 0;  ///< tokens of the whole text
  int n_chunks = 0;
  int64_t n_scored = 0;  ///< scored positions: n_chunks * (ctx - 1 - ctx/2)
  double mean_nll = 0;
  double ppl = 0;
  double ppl_error = 0;
  std::vector<double> running_ppl;  ///< after each chunk
  std::optional<KlStats> kl;
  nlohmann::json to_json() const;
  std::string to_markdown() const;
};

/// Runs the method on `model_dir` over the text file `text_file`. Throws UsageError
/// (exit 2) naming the file or value for: a missing or empty text file, a model without a
/// tokenizer, ctx < 3 or above the model's context, a text shorter than one chunk, a
/// kl_base file that is malformed or made for another text, ctx or vocab, a text that is not
/// valid UTF-8 (naming the file). Throws GateError (exit 1) when a scored position's logits
/// hold NaN/Inf (naming chunk and position): no NaN perplexity is ever returned.
PerplexityResult run_perplexity(const std::filesystem::path& model_dir, const std::filesystem::path& text_file,
                                const PerplexityOptions& opt);

/// The log-probs file (`--save-logits`): the 8 bytes "LLMPPLX1", a little-endian uint64
/// header length, that many bytes of JSON {"format": "llmport-perplexity-logprobs/1",
/// "producer", "model", "model_files" ({file: sha256} of config.json and the weight files), "text_sha256",
/// "ctx", "vocab", "dtype", "n_scored", "tokens": [scored positions' next-token ids]}, then
/// n_scored x vocab float32 log-probabilities (little-endian), position-major.
inline constexpr char kLogprobsMagic[9] = "LLMPPLX1";

}  // namespace llmport
