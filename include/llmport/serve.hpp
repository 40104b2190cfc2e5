#pragma once
// `llmport serve`: an OpenAI-compatible HTTP server over one model, with continuous
// batching (Engine::forward_batch over `parallel` sequence slots), Prometheus metrics and
// backpressure (a bounded queue; 429 beyond it). See docs/serving.md.
//
// Routes: POST /v1/completions, POST /v1/chat/completions (both with `stream`),
// GET /v1/models, GET /v1/models/{model} (404 model_not_found for another name), GET /health (503 {"status":"loading"} until the model is loaded, then
// 200 {"status":"ok"}), GET /metrics (Prometheus text, names prefixed llmport_).
// Errors use OpenAI's shape {"error": {"message", "type", "param", "code"}}:
//   400 malformed JSON, a field of the wrong type or out of range, n != 1, echo true,
//       n_prompt + max_tokens - 1 beyond the slot's context (message names the numbers);
//   408 a request head (request line and headers) not complete within read_timeout_s of
//       its first byte, or a body byte not within read_timeout_s of the last; 414 a request line
//       over 8192 bytes; 431 a header line over 8192 bytes or header lines over 64 KiB;
//   401 missing or wrong `Authorization: Bearer KEY` when api_key is set (/v1/* only);
//   404 unknown route; 405 known route, wrong method; 413 body over max_body_bytes (any
//       Content-Type, Content-Length or chunked);
//   429 (with Retry-After) when `parallel` requests run and `queue` more wait;
//   503 while loading or shutting down, or for a connection that found no thread within
//       1 s (max_connections, every one answering a request).
// Unknown request fields are ignored. A client that disconnects before its answer is
// complete (streamed or not) cancels its generation and frees its slot (counted as status
// 499 in llmport_requests_total).
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "llmport/dtype.hpp"
#include "llmport/quant.hpp"

namespace llmport {

struct KernelSelection;  // llmport/registry.hpp

/// Options of one server.
struct ServeOptions {
  std::string host = "127.0.0.1";  ///< address to bind (loopback by default)
  int port = 8080;                 ///< TCP port; 0 = any free port (the one bound is printed)
  int parallel = 4;                ///< sequence slots decoded together (>= 1)
  /// Total KV-cache budget in tokens shared by the slots (llama.cpp's --ctx-size): each
  /// slot holds ctx_size / parallel tokens, at most the model's context.
  int ctx_size = 4096;
  /// ctx_size was the user's (--ctx-size): a slot context above the model's is then capped
  /// with a warning; the default 4096 is capped quietly (a small model's slots hold it all).
  bool ctx_size_given = false;
  int queue = 16;                  ///< requests waiting for a slot (>= 0); beyond: 429
  std::string api_key;             ///< "" = no authentication
  std::optional<DType> dtype;      ///< compute dtype; default the checkpoint's
  /// Weight-only quantization of the layer projections (and lm_head), as EngineOptions.
  QuantType quant = QuantType::None;
  QuantType quant_lm_head = QuantType::None;
  int threads = 0;                 ///< compute threads; 0 = all cores
  std::shared_ptr<KernelSelection> kernels;  ///< tuned tile configs (deployment registry)
  std::filesystem::path chat_template_file;  ///< overrides the tokenizer's chat template
  std::string model_name;          ///< the `model` of responses; default the directory name
  int prefill_chunk = 128;         ///< prompt tokens prefilled per step, all slots together
  std::size_t max_body_bytes = std::size_t{8} << 20;  ///< request bodies beyond: 413
  /// Seconds the whole request head (request line, headers) may take from its first byte,
  /// and each next body byte: beyond, 408 and the connection ends.
  int read_timeout_s = 30;
  /// Connections served at once, each on its own thread; 0 = parallel + queue + 64. One
  /// more ends the connection waiting longest (>= 250 ms) on its client (idle, or its
  /// request still arriving), else waits for a thread up to 1 s, then is answered 503
  /// (Retry-After: 1). At least parallel + queue.
  int max_connections = 0;
  double shutdown_grace_s = 10;    ///< SIGINT/SIGTERM: seconds in-flight requests may finish
  int test_step_delay_ms = 0;      ///< test-only: pause after every batched step (ms)
};

/// Runs the server on the model directory `model_dir` until SIGINT or SIGTERM: binds,
/// prints "listening on http://HOST:PORT" to stdout, loads the model (/health answers 503
/// meanwhile), serves, and on the signal stops accepting requests (503), lets in-flight ones
/// finish within shutdown_grace_s, cancels the rest and returns 0. Throws UsageError for bad
/// options, a port it cannot bind ("cannot bind HOST:PORT: ..."; the socket has
/// SO_REUSEADDR only, so a port another server holds is refused, not shared), or weights + KV cache beyond the available memory (exit
/// 2), ConfigError / ArchitectureError for the model.
int run_server(const std::filesystem::path& model_dir, const ServeOptions& opt);

}  // namespace llmport
