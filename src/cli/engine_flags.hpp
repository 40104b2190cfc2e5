#pragma once
// The engine flags several commands share (--backend, --threads, --dtype, --registry,
// --inject-fault) turned into EngineOptions in one place, so run, verify, perplexity,
// diagnosis, serve and bench cannot drift apart in how a flag is read. Each command still
// registers its own options: their spellings and help texts differ and are part of the CLI.
#include <functional>
#include <optional>
#include <string>

#include "llmport/dtype.hpp"
#include "llmport/engine.hpp"
#include "llmport/model_config.hpp"

namespace llmport::cli {

/// The engine flags as a command parsed them.
struct EngineFlags {
  std::string backend = "cpu";
  int threads = 0;                    ///< 0 = all cores
  std::optional<std::string> dtype;   ///< nullopt: the checkpoint's dtype
  std::string registry;               ///< "": the backend's heuristic defaults, no registry
  std::string fault;                  ///< test only: --inject-fault kind[@layer][=value]
  /// --quantize-lm-head q8_0|q4_0 ("" = lm_head stays in the base dtype); needs a quantized
  /// --dtype (q8_0, q4_0).
  std::string quantize_lm_head;
};

/// A --dtype held as a plain string, where "" has always meant "the checkpoint's" (verify,
/// perplexity, diagnosis); `run` keeps an optional, so `run --dtype ""` stays an error.
std::optional<std::string> dtype_flag(const std::string& dtype);

/// EngineOptions from the flags: backend, threads, the parsed dtype (bf16|fp16|fp32, or
/// q8_0|q4_0 over the checkpoint's dtype: set_dtype_flag), the planted fault and,
/// with --registry, the registry's tuned tile configs. `context` (needed with a registry)
/// is called only when --registry is given: it sizes the prefill GEMM the registry is asked
/// for, and a command without --registry must not read the config for it. Throws
/// UsageError on a bad dtype, --quantize-lm-head (unknown, or without a quantized --dtype),
/// fault or registry directory, in that order.
EngineOptions engine_options_from_flags(const EngineFlags& flags, const std::function<int()>& context = {});

/// `--max-seq N` as load_model_config's cap: 0 (the flag's default) is no cap.
std::optional<int> context_cap(int max_seq);

/// The context the model runs with: the --max-seq cap when one was given, else
/// max_position_embeddings.
int model_context(const ModelConfig& cfg);

/// --dtype when given, else the config's torch_dtype, else bf16: the dtype bench and
/// kernels size costs and shapes with before any weights are open.
DType dtype_or_config(const std::string& dtype, const ModelConfig& cfg);

}  // namespace llmport::cli
