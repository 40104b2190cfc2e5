// `llmport serve MODEL|DEPLOYMENT_DIR [--host 127.0.0.1] [--port 8080] [--parallel N]
// [--ctx-size N] [--queue N] [--api-key KEY] [--dtype D] [--threads T] [--registry DIR]
// [--chat-template-file F]`: the OpenAI-compatible server (llmport/serve.hpp,
// docs/serving.md). A deployment directory (it holds deployment.json) serves its model with
// its dtype, threads and tuned kernel registry unless the flags say otherwise.
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/command.hpp"
#include "cli/engine_flags.hpp"
#include "cli/option_checks.hpp"
#include "llmport/deploy.hpp"
#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/kernels.hpp"
#include "llmport/model_config.hpp"
#include "llmport/serve.hpp"

namespace llmport::cli {
namespace {

struct ServeArgs {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 4;
  int ctx_size = 4096;
  bool ctx_size_given = false;
  int queue = 16;
  std::string api_key;
  std::optional<std::string> dtype;
  std::string quantize_lm_head;
  std::optional<int> threads;
  std::string registry;
  std::string chat_template_file;
  std::string model_name;
  int prefill_chunk = 128;
  double shutdown_grace = 10;
  int read_timeout = 30;
  int max_connections = 0;
  int test_step_delay_ms = 0;
};

int run_serve(const ServeArgs& a) {
  if (a.model.empty()) throw UsageError("MODEL is required (a model directory, deployment directory or org/name id)");
  ServeOptions o;
  o.host = a.host;
  o.port = a.port;
  o.parallel = a.parallel;
  o.ctx_size = a.ctx_size;
  o.ctx_size_given = a.ctx_size_given;
  o.queue = a.queue;
  o.api_key = a.api_key;
  o.chat_template_file = a.chat_template_file;
  o.model_name = a.model_name;
  o.prefill_chunk = a.prefill_chunk;
  o.shutdown_grace_s = a.shutdown_grace;
  o.read_timeout_s = a.read_timeout;
  o.max_connections = a.max_connections;
  o.test_step_delay_ms = a.test_step_delay_ms;
  std::filesystem::path dir;
  std::string registry = a.registry;
  std::optional<std::string> dtype = a.dtype;
  std::string lm_head = a.quantize_lm_head;
  int threads = a.threads.value_or(0);
  const std::filesystem::path manifest = std::filesystem::path(a.model) / "deployment.json";
  if (std::filesystem::is_regular_file(manifest)) {
    // A deployment: its model, dtype, threads and tuned registry, unless the flags say.
    const deploy::DeploymentRun d = deploy::read_deployment_run(a.model);
    if (!std::filesystem::is_directory(d.model_dir))
      throw ConfigError(manifest.string() + ": model.path: " + d.model_dir.string() +
                        " is not a directory (moved or deleted since the deployment?)");
    dir = d.model_dir;
    if (!dtype && !d.dtype.empty()) {
      dtype = d.dtype;
      try {  // refused here with the file named, not later as if a flag had said it
        EngineOptions probe_dtype;
        set_dtype_flag(probe_dtype, *dtype);
      } catch (const UsageError& e) {
        throw ConfigError(manifest.string() + ": dtype: " + e.what());
      }
    }
    if (!a.dtype && lm_head.empty()) lm_head = d.quantize_lm_head;
    // Another precision is the user's call, but not what the deployment's verdict covers
    // (compared as the engine reads them: "float32" is fp32; a quantized lm_head counts).
    if (a.dtype && !d.dtype.empty()) {
      EngineOptions given, deployed;
      set_dtype_flag(given, *a.dtype);
      set_dtype_flag(deployed, d.dtype);
      const std::string g = precision_name(given.dtype.value_or(DType::BF16), given.quant) +
                            (lm_head.empty() ? "" : " (lm_head " + lm_head + ")");
      const std::string v = precision_name(deployed.dtype.value_or(DType::BF16), deployed.quant) +
                            (d.quantize_lm_head.empty() ? "" : " (lm_head " + d.quantize_lm_head + ")");
      if (g != v)
        std::cerr << "warning: deployment " << a.model << " verified " << v << "; serving " << printable(g)
                  << " is not covered by its verdict\n";
    }
    // The CLI's limit (4 x the hardware threads), checked here with the file named, not by
    // the engine after the server is listening.
    if (!a.threads && d.threads > max_backend_threads())
      throw ConfigError(manifest.string() + ": threads: expected an integer in [0, " +
                        std::to_string(max_backend_threads()) + "], got " + std::to_string(d.threads));
    if (!a.threads) threads = d.threads;
    if (o.model_name.empty()) o.model_name = d.name;
    if (registry.empty() && std::filesystem::is_directory(std::filesystem::path(a.model) / "registry"))
      registry = (std::filesystem::path(a.model) / "registry").string();
    // As `make run`: the deployment's verdict covers the files it hashed, not later ones.
    if (!d.drift.empty())
      std::cerr << "warning: deployment " << a.model << ": " << printable(d.drift)
                << "; the deployment's verdict may not cover what is served\n";
    if (!d.not_passed.empty())
      std::cerr << "warning: deployment " << a.model << " has not passed: " << printable(d.not_passed) << "\n";
  } else {
    dir = resolve_model_dir(a.model);
  }
  // The server runs on the cpu backend; its engine flags are read as every command's.
  const EngineOptions e = engine_options_from_flags(
      {"cpu", threads, dtype, registry, /*fault=*/"", lm_head},
      [&] { return model_context(load_model_config(dir)); });
  o.dtype = e.dtype;
  o.quant = e.quant;
  o.quant_lm_head = e.quant_lm_head;
  o.threads = e.threads;
  o.kernels = e.kernels;
  return run_server(dir, o);
}

const Registrar reg{{"serve", "OpenAI-compatible HTTP server with continuous batching (docs/serving.md)",
                     [](CLI::App& sub) -> std::function<int()> {
                       auto a = std::make_shared<ServeArgs>();
                       add_model_arg(sub, &a->model);
                       sub.add_option("--host", a->host, "address to bind (default 127.0.0.1: loopback only)");
                       sub.add_option("--port", a->port, "TCP port (0: any free port; the bound one is printed; default 8080)")
                           ->check(in_range(0, 65535));
                       sub.add_option("--parallel", a->parallel, "sequence slots decoded together (default 4)")
                           ->check(in_range(1, 256));
                       CLI::Option* ctx =
                           sub.add_option("--ctx-size,-c", a->ctx_size,
                                          "total KV-cache budget in tokens, shared by the slots (each: ctx-size / "
                                          "parallel, at most the model's context; default 4096)")
                               ->check(at_least(2));
                       sub.add_option("--queue", a->queue, "requests that may wait for a slot; beyond: 429 (default 16)")
                           ->check(in_range(0, 4096));
                       // An empty key (an unset $KEY) would switch authentication off without a
                       // word; said here, before the generic "empty value" of option_rules.
                       sub.add_option("--api-key", a->api_key, "require 'Authorization: Bearer KEY' on /v1/*")
                           ->check(CLI::Validator(
                               [](std::string& k) {
                                 return k.empty() ? std::string("empty key (omit the flag to serve without "
                                                                "authentication)")
                                                  : std::string();
                               },
                               "", "API_KEY"));
                       sub.add_option("--dtype", a->dtype, "weight compute dtype: bf16 | fp16 | fp32, or q8_0 | "
                                                           "q4_0 weight-only quantization (default: the checkpoint's "
                                                           "or the deployment's)");
                       sub.add_option("--quantize-lm-head", a->quantize_lm_head,
                                      "q8_0 | q4_0: quantize lm_head too (needs a quantized --dtype)");
                       sub.add_option("--threads,-t", a->threads, "compute threads (0: all cores)")
                           ->check(thread_count());
                       sub.add_option("--registry", a->registry,
                                      "kernel registry directory looked up before the shipped one "
                                      "(default for a deployment: its registry/)");
                       sub.add_option("--chat-template-file", a->chat_template_file,
                                      "Jinja chat template replacing the tokenizer's");
                       // Every response echoes the name in JSON: invalid UTF-8 would come back as
                       // U+FFFD (a name no client could send back) and a newline would break the
                       // listening line scripts read.
                       sub.add_option("--model-name", a->model_name, "the `model` of responses (default: directory name)")
                           ->check(CLI::Validator(
                               [](std::string& n) {
                                 return printable(n) == n ? std::string()
                                                          : "'" + printable(n) +
                                                                "' holds invalid UTF-8 or a control character";
                               },
                               "", "NAME"));
                       sub.add_option("--prefill-chunk", a->prefill_chunk,
                                      "prompt tokens prefilled per step, all slots together (default 128)")
                           ->check(in_range(1, 65536));
                       sub.add_option("--shutdown-grace", a->shutdown_grace,
                                      "SIGINT/SIGTERM: seconds in-flight requests may still finish (default 10)")
                           ->check(in_range(0, 3600));
                       sub.add_option("--read-timeout", a->read_timeout,
                                      "seconds the request head may take in all, and each next body byte; beyond: 408 (default 30)")
                           ->check(in_range(1, 3600));
                       sub.add_option("--max-connections", a->max_connections,
                                      "connections served at once (default: parallel + queue + 64); beyond, the "
                                      "one idle longest is closed, else 503")
                           ->check(in_range(1, 65536));
                       sub.add_option("--test-step-delay-ms", a->test_step_delay_ms,
                                      "test-only: pause after every batched step")
                           ->check(in_range(0, 10000))
                           ->group("");
                       return [a, ctx] {
                         a->ctx_size_given = ctx->count() > 0;
                         return run_serve(*a);
                       };
                     }}};

}  // namespace
}  // namespace llmport::cli
