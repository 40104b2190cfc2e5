// `llmport perplexity MODEL -f TEXT [-c CTX] [--dtype D] [--save-logits FILE]
// [--kl-divergence-base FILE] [-o md|json]`: llama-perplexity's method (perplexity.hpp);
// exit 0, or 2 for bad input.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/engine_flags.hpp"
#include "cli/option_checks.hpp"
#include "llmport/dtype.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/perplexity.hpp"

namespace llmport::cli {
namespace {

struct PerplexityArgs {
  std::string model, text, dtype, quantize_lm_head, backend = "cpu", save_logits, kl_base, output = "md";
  int ctx = 0;
  int threads = 0;
};

int run_perplexity_cmd(const PerplexityArgs& a) {
  if (a.output != "md" && a.output != "json") throw UsageError("-o: expected md or json, got '" + a.output + "'");
  if (a.text.empty()) throw UsageError("perplexity: -f TEXT is required");
  PerplexityOptions opt;
  opt.engine = engine_options_from_flags(
      {a.backend, a.threads, dtype_flag(a.dtype), /*registry=*/"", /*fault=*/"", a.quantize_lm_head});
  opt.ctx = a.ctx;
  if (!a.save_logits.empty()) {
    check_output_parent(a.save_logits, "--save-logits");
    opt.save_logits = a.save_logits;
  }
  if (!a.kl_base.empty()) opt.kl_base = a.kl_base;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  opt.progress = [&](int chunk, int chunks, double ppl) {
    // llama-perplexity prints the running value per chunk; a bar only on a terminal.
    if (tty) std::cerr << "\rchunk " << chunk << "/" << chunks << " PPL " << ppl << (chunk == chunks ? "\n" : "")
                       << std::flush;
  };
  const std::string dir = resolve_model_dir(a.model);
  const PerplexityResult r = run_perplexity(dir, a.text, opt);
  if (a.output == "json") std::cout << r.to_json().dump(1) << "\n";
  else std::cout << r.to_markdown();
  return kExitOk;
}

Registrar reg{Command{
    "perplexity",
    "Perplexity over a text by llama-perplexity's method; with --kl-divergence-base, the KL divergence to a saved run",
    [](CLI::App& sub) -> std::function<int()> {
      sub.footer(
          "Method: the whole text tokenized once, non-overlapping chunks of CTX tokens (tail dropped), each chunk's\n"
          "first token BOS when the tokenizer adds one, positions CTX/2 .. CTX-2 scored; PPL = exp(mean NLL).\n"
          "exit codes: 0 done, 1 the model's logits are NaN/Inf, 2 bad input (missing/empty text, text shorter than\n"
          "one chunk, CTX < 3 or above the context, a base file made for another text, ctx or vocab)");
      auto a = std::make_shared<PerplexityArgs>();
      add_model_arg(sub, &a->model);
      sub.add_option("-f,--file", a->text, "text file to score");
      sub.add_option("-c,--ctx-size", a->ctx, "chunk length in tokens (default min(512, the model's context))")
          ->check(at_least(3));
      sub.add_option("--dtype", a->dtype, "engine compute dtype: bf16|fp16|fp32, or q8_0|q4_0 weight-only quantization of the "
                                          "layer projections (default: checkpoint dtype)");
      sub.add_option("--quantize-lm-head", a->quantize_lm_head, "q8_0 | q4_0: quantize lm_head too (needs a quantized --dtype)");
      sub.add_option("--backend", a->backend, "engine backend (cpu, reference)")->capture_default_str();
      sub.add_option("-t,--threads", a->threads, "engine threads (0 = all cores)")->check(thread_count());
      sub.add_option("--save-logits", a->save_logits,
                     "write every scored position's log-probs to FILE (base for --kl-divergence-base)");
      sub.add_option("--kl-divergence-base", a->kl_base, "a --save-logits file of another run over the same text");
      sub.add_option("-o,--output", a->output, "md|json")->capture_default_str();
      return [a] { return run_perplexity_cmd(*a); };
    }}};

}  // namespace
}  // namespace llmport::cli
