#pragma once
// `llmport bench --compare FILE`: llama.cpp's llama-bench results (`llama-bench -o json`, or
// `-o jsonl`) of the same shapes beside llmport's, so a user with llama.cpp installed gets
// the side-by-side table in one command.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace llmport::cli {

/// One llama-bench test: a pp test has n_gen 0, a tg test n_prompt 0 (llama-bench's fields
/// n_prompt, n_gen, n_depth, n_threads, avg_ts [tokens/s], model_type).
struct LlamaBenchRow {
  int n_prompt = 0;
  int n_gen = 0;
  int n_depth = 0;  ///< tokens already in the KV cache (llama-bench -d); absent: 0
  int n_threads = 0;
  double avg_ts = 0;        ///< tokens/s
  std::string model_type;   ///< e.g. "llama 1B BF16" ("" when absent)
};

/// Reads a llama-bench JSON array (or one JSON object per line). Throws UsageError naming
/// the file (and the row and field) when it is missing, not JSON, a row lacks n_prompt,
/// n_gen, n_threads or a finite avg_ts > 0, has a negative n_depth, or the rows are of more
/// than one model_type (the best of two models' runs would be compared with this one's).
std::vector<LlamaBenchRow> read_llama_bench(const std::filesystem::path& file);

/// The best avg_ts [tokens/s] among the rows of test (n_prompt, n_gen) at `threads` and
/// depth 0, as `bench` measures (llama-bench runs in several modes, e.g. mmap on and off:
/// the better one is the figure to beat); nullopt when no row matches.
std::optional<double> llama_bench_best(const std::vector<LlamaBenchRow>& rows, int n_prompt, int n_gen,
                                       int threads);

}  // namespace llmport::cli
