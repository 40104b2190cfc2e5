// `llmport serve MODEL|DEPLOYMENT_DIR [--host 127.0.0.1] [--port 8080] [--parallel N]
// [--ctx-size N] [--queue N] [--api-key KEY] [--dtype D] [--threads T] [--registry DIR]
// [--chat-template-file F]`: the OpenAI-compatible server (llmport/serve.hpp,
// docs/serving.md). A deployment directory (it holds deployment.json) serves its model with
// its dtype, threads and tuned kernel registry unless the flags say otherwise.
#include <filesystem>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

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

// deployment.json's `section.key` (or root `key` when section is empty) as text; "" when
// absent. Throws ConfigError naming the file and field when it is not a string.
std::string manifest_text(const nlohmann::json& m, const std::string& section, const std::string& key,
                          const std::filesystem::path& file) {
  const nlohmann::json* obj = &m;
  if (!section.empty()) {
    if (!m.contains(section)) return "";
    obj = &m[section];
    if (!obj->is_object()) throw ConfigError(file.string() + ": " + section + ": expected an object");
  }
  if (!obj->contains(key)) return "";
  const nlohmann::json& v = (*obj)[key];
  if (!v.is_string())
    throw ConfigError(file.string() + ": " + (section.empty() ? "" : section + ".") + key + ": expected a string, got " +
                      v.type_name());
  return v.get<std::string>();
}

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
    // A deployment: its model, dtype, threads and tuned registry.
    const nlohmann::json m = parse_json_text(read_text_file(manifest), manifest.string());
    if (!m.is_object()) throw ConfigError(manifest.string() + ": expected a JSON object");
    const std::string path = manifest_text(m, "model", "path", manifest);
    if (path.empty()) throw ConfigError(manifest.string() + ": model.path: missing or empty");
    if (!std::filesystem::is_directory(path))
      throw ConfigError(manifest.string() + ": model.path: " + path + " is not a directory (moved or deleted since "
                        "the deployment?)");
    dir = path;
    if (const std::string recorded = manifest_text(m, "", "dtype", manifest); !dtype && !recorded.empty()) {
      dtype = recorded;
      try {  // refused here with the file named, not later as if a flag had said it
        EngineOptions probe_dtype;
        set_dtype_flag(probe_dtype, *dtype);
      } catch (const UsageError& e) {
        throw ConfigError(manifest.string() + ": dtype: " + e.what());
      }
    }
    if (!a.dtype && lm_head.empty()) lm_head = manifest_text(m, "", "quantize_lm_head", manifest);
    if (!a.threads && m.contains("threads"))
      try {
        // The CLI's limit (4 x the hardware threads), checked here with the file named, not
        // by the engine after the server is listening.
        threads = static_cast<int>(json_integer(m["threads"], "threads", 0, max_backend_threads()));
      } catch (const ConfigError& e) {
        throw ConfigError(manifest.string() + ": " + e.what());
      }
    if (o.model_name.empty()) o.model_name = manifest_text(m, "", "name", manifest);
    if (registry.empty() && std::filesystem::is_directory(std::filesystem::path(a.model) / "registry"))
      registry = (std::filesystem::path(a.model) / "registry").string();
    // As `make run`: the deployment's verdict covers the files it hashed, not later ones.
    if (const std::string drift = deploy::deployed_model_drift(a.model, dir); !drift.empty())
      std::cerr << "warning: deployment " << a.model << ": " << printable(drift)
                << "; the deployment's verdict may not cover what is served\n";
    if (const std::string open = deploy::deployment_not_passed(a.model); !open.empty())
      std::cerr << "warning: deployment " << a.model << " has not passed: " << printable(open) << "\n";
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
                       sub.add_option("--port", a->port, "TCP port (0: any free port; the bound one is printed)")
                           ->check(in_range(0, 65535));
                       sub.add_option("--parallel", a->parallel, "sequence slots decoded together")
                           ->check(in_range(1, 256));
                       CLI::Option* ctx =
                           sub.add_option("--ctx-size,-c", a->ctx_size,
                                          "total KV-cache budget in tokens, shared by the slots (each: ctx-size / "
                                          "parallel, at most the model's context; default 4096)")
                               ->check(at_least(2));
                       sub.add_option("--queue", a->queue, "requests that may wait for a slot; beyond: 429")
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
                                      "prompt tokens prefilled per step, all slots together")
                           ->check(in_range(1, 65536));
                       sub.add_option("--shutdown-grace", a->shutdown_grace,
                                      "SIGINT/SIGTERM: seconds in-flight requests may still finish")
                           ->check(in_range(0, 3600));
                       sub.add_option("--read-timeout", a->read_timeout,
                                      "seconds the request head may take in all, and each next body byte; beyond: 408")
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
