// `llmport run MODEL (--prompt TEXT | --prompt-ids 1,2,3) [--n-tokens N] [--temperature T]
// [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S] [--backend B]
// [--threads N] [--profile] [--dtype D] [--json]`: generate from a prompt, streaming text.
// On an instruct model (its tokenizer has a chat template) --prompt is rendered through the
// template ([--system TEXT], unless --raw); `--chat` is the interactive multi-turn chat
// (src/cli/run_chat.cpp).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/dtype_warning.hpp"
#include "cli/engine_flags.hpp"
#include "cli/option_checks.hpp"
#include "cli/run_chat.hpp"
#include "llmport/file_io.hpp"
#include "llmport/chat_template.hpp"
#include "llmport/deploy.hpp"
#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/hub.hpp"
#include "llmport/generate.hpp"
#include "llmport/model_config.hpp"
#include "llmport/registry.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/weights.hpp"

namespace llmport::cli {
namespace {

struct RunArgs {
  std::string model;
  std::optional<std::string> prompt;
  std::optional<std::string> prompt_ids;
  std::optional<int> n_tokens;
  std::optional<double> temperature, top_p, min_p, repeat_penalty;
  std::optional<int> top_k;
  uint64_t seed = 0;
  std::string backend = "cpu";
  int threads = 0;
  bool profile = false;
  std::optional<std::string> dtype;
  std::string quantize_lm_head;
  bool json = false;
  bool ignore_eos = false;
  int max_seq = 0;
  std::string fault;
  bool chat = false;                  // interactive multi-turn chat from stdin
  std::optional<std::string> system;  // system message of the chat template
  bool raw = false;                   // --prompt as plain text even on an instruct model
  std::string registry;               // writable kernel registry looked up first (tuned configs)
  std::string deployment;             // deployment whose model this run should be (make run): warns when it moved
};


std::string read_stdin() {
  std::string s((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  // `echo text | llmport run --prompt -`: the shell's final newline is not part of the prompt.
  if (!s.empty() && s.back() == '\n') s.pop_back();
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

// Sampling defaults from generation_config.json (HF: do_sample absent = greedy), then flags.
SamplingParams sampling_from(const RunArgs& a, const GenerationConfig& g) {
  SamplingParams p;
  const bool sample = g.do_sample.value_or(false);
  p.temperature = sample ? g.temperature.value_or(1.0) : 0.0;
  if (sample) {
    p.top_k = g.top_k.value_or(0);
    p.top_p = g.top_p.value_or(1.0);
    p.min_p = g.min_p.value_or(0.0);
  }
  p.repetition_penalty = g.repetition_penalty.value_or(1.0);
  if (a.temperature) p.temperature = *a.temperature;
  if (a.top_k) p.top_k = *a.top_k;
  if (a.top_p) p.top_p = *a.top_p;
  if (a.min_p) p.min_p = *a.min_p;
  if (a.repeat_penalty) p.repetition_penalty = *a.repeat_penalty;
  p.seed = a.seed;
  p.validate();
  return p;
}

void print_profile(std::ostream& os, const Engine& eng, const GenerateResult& r) {
  const double prefill_tps = r.prefill_ms > 0 ? 1000.0 * r.prompt_ids.size() / r.prefill_ms : 0;
  const double decode_ms_tok = r.n_decode > 0 ? r.decode_ms / r.n_decode : 0;
  const double decode_tps = decode_ms_tok > 0 ? 1000.0 / decode_ms_tok : 0;
  double total = 0;
  const auto ops = eng.profile();
  for (const auto& o : ops) total += o.ms;
  os << fmt::format("\n{:<16} {:>10} {:>8} {:>7}\n", "op", "ms", "calls", "%");
  for (const auto& o : ops)
    os << fmt::format("{:<16} {:>10.3f} {:>8} {:>6.1f}%\n", o.op, o.ms, o.calls,
                      total > 0 ? 100.0 * o.ms / total : 0.0);
  os << fmt::format("prefill: {} tokens, {:.3f} ms, {:.2f} tokens/s\n", r.prompt_ids.size(),
                    r.prefill_ms, prefill_tps);
  os << fmt::format("decode: {} tokens, {:.3f} ms/token, {:.2f} tokens/s\n", r.n_decode,
                    decode_ms_tok, decode_tps);
}

// Where the model's files are: the config's directory (MODEL may name its config.json).
std::filesystem::path files_dir(const ModelConfig& cfg, const std::string& dir) {
  return cfg.dir.empty() ? std::filesystem::path(dir) : cfg.dir;
}

// The flags must name one mode (one-shot or --chat) with the inputs it needs. Checked after a
// local MODEL resolved (see run_run) and before anything else is read.
void check_mode(const RunArgs& a) {
  if (a.prompt && a.prompt_ids) throw UsageError("give either --prompt or --prompt-ids, not both");
  if (a.chat && (a.prompt || a.prompt_ids || a.json))
    throw UsageError("--chat reads the conversation from stdin: drop --prompt / --prompt-ids / --json");
  if (a.chat && a.raw) throw UsageError("--chat needs the chat template: drop --raw");
  if (!a.chat && !a.prompt && !a.prompt_ids)
    throw UsageError("a prompt is required: --prompt TEXT or --prompt-ids 1,2,3 (or --chat)");
}

// Loader warnings (e.g. an unexpected extra tensor) are shown, never fatal.
void print_weight_warnings(const WeightStore& weights) {
  for (const auto& w : weights.warnings()) std::cerr << "warning: " << printable(w) << "\n";
}

// --chat never planted faults (--inject-fault is a test hook of the one-shot mode).
EngineFlags engine_flags(const RunArgs& a, bool chat) {
  return {a.backend, a.threads, a.dtype, a.registry, chat ? std::string() : a.fault, a.quantize_lm_head};
}

int run_chat_mode(const RunArgs& a, const ModelConfig& cfg, const std::string& dir, const Tokenizer* tok,
                  int context) {
  if (!tok) throw UsageError(dir + ": --chat needs the model's tokenizer.json");
  ChatOptions copt;
  copt.system = a.system.value_or("");
  const auto& g = cfg.generation;
  copt.max_new_tokens = a.n_tokens ? *a.n_tokens : g.max_new_tokens ? *g.max_new_tokens : 256;
  copt.sampling = sampling_from(a, cfg.generation);
  copt.stop_ids = a.ignore_eos ? std::vector<int>{} : chat_stop_ids(cfg.stop_ids(), *tok);
  instruct_prompt_ids(*tok, "", "");  // no chat template: fail before loading the weights
  const WeightStore weights = WeightStore::open(files_dir(cfg, dir), cfg);
  print_weight_warnings(weights);
  EngineOptions eopt = engine_options_from_flags(engine_flags(a, /*chat=*/true), [&] { return context; });
  eopt.max_seq = 0;  // the context, bounded by EngineOptions::kDefaultMaxSeq (KV memory)
  Engine engine(cfg, weights, eopt);
  return run_chat_loop(engine, *tok, copt, std::cin, std::cout, std::cerr, isatty(STDIN_FILENO) != 0);
}

// The one-shot prompt as ids, built before the weights are read so bad input fails fast.
struct Prompt {
  std::string text;       // --prompt (or stdin); empty with --prompt-ids
  std::vector<int> ids;
  bool instruct = false;  // rendered through the model's chat template
};

Prompt build_prompt(const RunArgs& a, const ModelConfig& cfg, const std::string& dir, const Tokenizer* tok,
                    int context) {
  Prompt p;
  // An instruct model's prompt goes through its chat template (unless --raw).
  p.instruct = a.prompt && tok && !a.raw && !tok->chat_template().empty();
  if (a.system && !p.instruct)
    throw UsageError("--system needs the chat template of an instruct model (and no --raw / --prompt-ids)");
  if (a.prompt_ids) {
    p.ids = parse_id_list(*a.prompt_ids, "--prompt-ids");
    // Before the prompt echo: "[]" printed an empty line ahead of the error.
    if (p.ids.empty()) throw UsageError("--prompt-ids: no token ids in '" + *a.prompt_ids + "' (at least one is needed)");
  } else {
    if (!tok) throw UsageError(dir + ": the model has no tokenizer.json; use --prompt-ids 1,2,3");
    p.text = *a.prompt == "-" ? read_stdin() : *a.prompt;
    p.ids = p.instruct ? instruct_prompt_ids(*tok, a.system.value_or(""), p.text) : tok->encode(p.text);
    if (p.ids.empty()) throw UsageError("the prompt encodes to zero tokens");
  }
  for (int id : p.ids)
    if (id >= cfg.vocab_size) {
      if (a.prompt_ids)
        throw UsageError("prompt token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                         std::to_string(cfg.vocab_size) + ")");
      // The tokenizer made the id: config.json's vocab_size or tokenizer.json is at fault, not
      // the prompt. The weights' shapes say which (their check names file and tensor).
      (void)WeightStore::open(files_dir(cfg, dir), cfg);
      throw UsageError("the tokenizer encodes the prompt to token id " + std::to_string(id) +
                       ", outside the model's vocabulary [0, " + std::to_string(cfg.vocab_size) +
                       "): tokenizer.json and config.json's vocab_size disagree");
    }
  const int n_prompt = static_cast<int>(p.ids.size());
  if (n_prompt > context)
    throw UsageError("the prompt is " + std::to_string(n_prompt) +
                     " tokens, longer than the model context of " + std::to_string(context) + " tokens");
  return p;
}

// Token budget: --n-tokens (an overflow is an error), else generation_config, clamped.
// The last sampled token is never fed back, so the KV cache holds n_prompt + n_tokens - 1
// positions: that must fit the context (64-bit sum: -n may be INT_MAX).
int token_budget(const RunArgs& a, const GenerationConfig& g, int n_prompt, int context) {
  if (a.n_tokens) {
    const int n_tokens = *a.n_tokens;
    if (static_cast<long long>(n_prompt) + n_tokens - 1 > context)
      throw UsageError("prompt (" + std::to_string(n_prompt) + " tokens) + --n-tokens " +
                       std::to_string(n_tokens) + " exceed the model context of " +
                       std::to_string(context) + " tokens");
    return n_tokens;
  }
  int n_tokens = g.max_new_tokens ? *g.max_new_tokens
                 : g.max_length   ? *g.max_length - n_prompt
                                  : 256;
  n_tokens = std::min(n_tokens, context - n_prompt + 1);
  if (n_tokens < 1)
    throw UsageError("the prompt (" + std::to_string(n_prompt) +
                     " tokens) leaves no room to generate within the context of " +
                     std::to_string(context) + " tokens");
  return n_tokens;
}

GenerateOptions generate_options(const RunArgs& a, const ModelConfig& cfg, const Prompt& p, const Tokenizer* tok,
                                 int n_tokens) {
  GenerateOptions gopt;
  gopt.n_tokens = n_tokens;
  gopt.sampling = sampling_from(a, cfg.generation);
  // An instruct answer ends at the template's end-of-turn tokens, not only at EOS.
  gopt.stop_ids = p.instruct ? chat_stop_ids(cfg.stop_ids(), *tok) : cfg.stop_ids();
  gopt.ignore_stop = a.ignore_eos;
  gopt.record_top = a.json ? 5 : 0;
  return gopt;
}

// What was generated: the result and, with a tokenizer, its text.
struct Streamed {
  GenerateResult result;
  std::string text;
};

// The prompt's pending text once it proved to be the prompt's own: printed only where the
// prompt's ids were echoed through the decoder (a text prompt is echoed as given).
std::string prompt_tail(const RunArgs& a, IncrementalDecoder& dec) {
  std::string tail = dec.take_prompt_tail();
  return a.prompt_ids ? tail : std::string();
}

// The prompt echo that precedes the streamed answer (text mode only).
void echo_prompt(const RunArgs& a, const Prompt& p, std::optional<IncrementalDecoder>& dec) {
  // What the decoder emitted for the prompt ids (bytes of an unfinished character held).
  const std::string prompt_stream = dec ? dec->seed(p.ids) : std::string();
  if (a.json) return;
  if (a.prompt_ids) {
    if (dec) {
      // The decoder's own output: a prompt ending inside a multi-byte character leaves
      // those bytes pending: the continuation starts with the character a generated byte
      // finishes, or they are printed as the prompt's (take_prompt_tail) before it.
      std::cout << prompt_stream;
    } else {
      for (std::size_t i = 0; i < p.ids.size(); ++i) std::cout << (i ? " " : "") << p.ids[i];
    }
  } else if (!p.instruct) {
    std::cout << p.text;  // an instruct answer is printed alone
  }
  std::cout.flush();
}

// Generates, printing each token as it comes (text mode); the decoder has seen the prompt
// first, so a piece that completes a character the prompt began prints correctly.
Streamed stream(const RunArgs& a, Engine& engine, const Prompt& p, const GenerateOptions& gopt,
                const Tokenizer* tok) {
  std::optional<IncrementalDecoder> dec;
  if (tok) dec.emplace(*tok, /*skip_special_tokens=*/true);
  echo_prompt(a, p, dec);
  Streamed s;
  auto on_token = [&](int id) {
    if (dec) {
      std::string piece = dec->push(id);
      s.text += piece;
      if (!a.json) std::cout << prompt_tail(a, *dec) << piece << std::flush;
    } else if (!a.json) {
      std::cout << " " << id << std::flush;
    }
  };
  try {
    s.result = generate(engine, p.ids, gopt, on_token);
  } catch (const Error&) {
    // The streamed text has no newline yet: end its line so `error: ...` starts its own.
    if (!a.json) std::cout << "\n" << std::flush;
    throw;
  }
  if (dec) {
    std::string tail = dec->flush();
    s.text += tail;
    if (!a.json) std::cout << prompt_tail(a, *dec) << tail;
  }
  return s;
}

void print_json(const RunArgs& a, const std::string& dir, Engine& engine, const EngineOptions& eopt,
                const Streamed& s, bool has_tokenizer) {
  const GenerateResult& r = s.result;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& st : r.steps) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [id, logit] : st.top) top.push_back({{"id", id}, {"logit", logit}});
    steps.push_back({{"token", st.token}, {"top5", top}});
  }
  nlohmann::json out = {{"model", dir},
                        {"backend", engine.backend().name()},
                        {"dtype", precision_name(engine.dtype(), engine.quant())},
                        {"prompt_ids", r.prompt_ids},
                        {"generated_ids", r.generated_ids},
                        {"text", has_tokenizer ? nlohmann::json(s.text) : nlohmann::json(nullptr)},
                        {"stop_reason", r.stop_reason},
                        {"steps", steps},
                        {"prefill_ms", r.prefill_ms},
                        {"decode_ms", r.decode_ms},
                        {"n_decode", r.n_decode},
                        {"planted_fault", eopt.fault.spec.empty() ? nlohmann::json(nullptr)
                                                                  : nlohmann::json(eopt.fault.spec)}};
  if (eopt.kernels) {
    out["kernel_configs"] = {{"registry", a.registry},
                             {"chosen", eopt.kernels->chosen},
                             {"heuristic_used", eopt.kernels->heuristic_used},
                             {"foreign_skipped", eopt.kernels->foreign_skipped}};
  }
  if (a.profile) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& o : engine.profile()) ops.push_back({{"op", o.op}, {"ms", o.ms}, {"calls", o.calls}});
    out["profile"] = ops;
  }
  // A sampled token may end in the middle of a UTF-8 character: replaced by U+FFFD, as the
  // streamed text and serve do, never an exception that loses the result.
  std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// Text mode: end the streamed line; with --profile the timings go to stderr, so stdout
// stays the generated text alone.
void finish_text(const RunArgs& a, const Engine& engine, const EngineOptions& eopt, const GenerateResult& r) {
  std::cout << "\n" << std::flush;
  if (!a.profile) return;
  print_profile(std::cerr, engine, r);
  // Which tile configs the timings above ran with (issue 6: every report that used a
  // heuristic default says so).
  if (!eopt.kernels)
    std::cerr << "kernel configs: the backend's heuristic defaults (no --registry)\n";
  else if (!eopt.kernels->heuristic_used.empty())
    std::cerr << "kernel configs: " << eopt.kernels->heuristic_used.size()
              << " shape(s) not measured on this machine ran with the heuristic default config\n";
  else if (const auto& q = eopt.kernels->quant_default_used; !q.empty())
    std::cerr << "kernel configs: the float shapes from the registry " << a.registry << "; " << q.size()
              << " quantized shape(s) without an entry there ran with the backend's act default (first: "
              << q.front() << ")\n";
  else
    std::cerr << "kernel configs: every linear shape from the registry " << a.registry << "\n";
}

int run_run(const RunArgs& a) {
  // MODEL first: a missing or broken model (no such path, no config.json, a bad config) is
  // the first thing said, before any prompt mistake. An HF id not on disk is resolved after
  // the prompt flags: a usage mistake must not wait for a download.
  const bool hub_id = is_hub_model(a.model);
  if (hub_id) check_mode(a);
  const std::string dir = resolve_model_dir(a.model);
  const ModelConfig cfg = load_model_config(dir, context_cap(a.max_seq));
  if (!hub_id) check_mode(a);
  // A deployment's `make run` says when the model is no longer the one its verdict covers:
  // a warning, not a refusal (running edited weights on purpose is the user's call).
  if (!a.deployment.empty()) {
    const deploy::DeploymentRun d = deploy::read_deployment_run(a.deployment, dir);
    if (!d.drift.empty())
      std::cerr << "warning: deployment " << a.deployment << ": " << printable(d.drift)
                << "; the deployment's verdict may not cover this run\n";
    if (!d.not_passed.empty())
      std::cerr << "warning: deployment " << a.deployment << " has not passed: " << printable(d.not_passed) << "\n";
  }
  const int context = model_context(cfg);
  if (!a.dtype)
    if (auto w = torch_dtype_warning(cfg.torch_dtype, find_config_json(dir).string())) std::cerr << "warning: " << printable(*w) << "\n";
  std::unique_ptr<Tokenizer> tok;
  if (Tokenizer::exists(files_dir(cfg, dir))) tok = Tokenizer::load(files_dir(cfg, dir));
  if (tok) warn_tokenizer_disagreements(*tok, std::cerr);
  warn_unrun_model_settings(files_dir(cfg, dir), std::cerr);
  if (a.chat) return run_chat_mode(a, cfg, dir, tok.get(), context);

  const Prompt prompt = build_prompt(a, cfg, dir, tok.get(), context);
  const int n_prompt = static_cast<int>(prompt.ids.size());
  const GenerateOptions gopt =
      generate_options(a, cfg, prompt, tok.get(), token_budget(a, cfg.generation, n_prompt, context));

  const WeightStore weights = WeightStore::open(files_dir(cfg, dir), cfg);
  print_weight_warnings(weights);
  EngineOptions eopt = engine_options_from_flags(engine_flags(a, /*chat=*/false), [&] { return context; });
  eopt.max_seq = n_prompt + gopt.n_tokens - 1;
  Engine engine(cfg, weights, eopt);
  engine.set_profiling(a.profile);

  const Streamed s = stream(a, engine, prompt, gopt, tok.get());
  if (a.json)
    print_json(a, dir, engine, eopt, s, tok != nullptr);
  else
    finish_text(a, engine, eopt, s.result);
  return kExitOk;
}

const Registrar reg{{"run", "generate text from a prompt (prefill + KV-cache decode), streaming the output",
                     [](CLI::App& sub) -> std::function<int()> {
                       auto a = std::make_shared<RunArgs>();
                       add_model_arg(sub, &a->model);
                       sub.add_option("-p,--prompt", a->prompt, "prompt text ('-' reads stdin)");
                       sub.add_option("--prompt-ids", a->prompt_ids, "prompt token ids: 1,2,3 or a JSON array \"[1, 2, 3]\"");
                       sub.add_option("--n-tokens,-n", a->n_tokens,
                                      "maximum new tokens (default: generation_config.json max_new_tokens, or its max_length "
                                      "less the prompt, else "
                                      "256; at most the context left after the prompt)")
                           ->check(at_least(1));
                       sub.add_option("--temperature", a->temperature, "sampling temperature (0: greedy)")
                           ->check(at_least(0));
                       sub.add_option("--top-k", a->top_k, "top-k (0: off)")->check(at_least(0));
                       sub.add_option("--top-p", a->top_p, "top-p in (0, 1] (1: off)")->check(in_range(0.0, 1.0, /*lo_open=*/true));
                       sub.add_option("--min-p", a->min_p, "min-p in [0, 1] (0: off)")->check(in_range(0.0, 1.0));
                       sub.add_option("--repeat-penalty", a->repeat_penalty, "repetition penalty > 0 (1: off)")
                           ->check(above(0));
                       sub.add_option("--seed", a->seed, "random seed for sampling (default 0: a run repeats itself; serve draws one per request)");
                       sub.add_option("--backend", a->backend, "reference | cpu")
                           ->check(CLI::IsMember(available_backends()));
                       sub.add_option("--threads,-t", a->threads, "worker threads (0: all cores)")
                           ->check(thread_count());
                       sub.add_flag("--profile", a->profile, "per-op times, prefill and decode speed (stderr)");
                       sub.add_option("--dtype", a->dtype, "weight compute dtype: bf16 | fp16 | fp32, or q8_0 | "
                                                           "q4_0 weight-only quantization (default: the checkpoint's torch_dtype)");
                       sub.add_option("--quantize-lm-head", a->quantize_lm_head,
                                      "q8_0 | q4_0: quantize lm_head too (needs a quantized --dtype)");
                       sub.add_flag("--json", a->json, "print one JSON object instead of streaming text");
                       sub.add_flag("--ignore-eos", a->ignore_eos, "do not stop at stop ids");
                       sub.add_option("--max-seq", a->max_seq, "cap the context (tokens)")
                           ->check(at_least(1));
                       sub.add_flag("--chat", a->chat,
                                    "interactive chat: one message per stdin line, /reset, Ctrl-D to leave");
                       sub.add_option("--system", a->system, "system message for the chat template");
                       sub.add_flag("--raw", a->raw, "use --prompt as plain text even on an instruct model");
                       sub.add_option("--deployment", a->deployment,
                                      "deployment directory (make run passes it): warn when MODEL is not its model "
                                      "or a model file's size or mtime changed since deployment");
                       sub.add_option("--registry", a->registry,
                                      "kernel registry directory looked up before the shipped one "
                                      "(a deployment's registry/: its tuned tile configs)");
                       sub.add_option("--inject-fault", a->fault, "test only: plant a fault kind[@layer][=value] in the engine")
                           ->group("");
                       return [a] { return run_run(*a); };
                     }}};

}  // namespace
}  // namespace llmport::cli
