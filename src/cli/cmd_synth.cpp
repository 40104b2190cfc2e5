// `llmport synth --preset NAME --out DIR [--seed S] [--dtype bf16] [--tokenizer DIR | --ascii-tokenizer]
// [--force]`
// and `llmport synth --list`: write a random-weight model in Hugging Face layout.
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "llmport/error.hpp"
#include "llmport/synth.hpp"
#include "llmport/tokenizer.hpp"

namespace llmport::cli {
namespace {

struct SynthArgs {
  std::string preset;
  std::string out;
  uint64_t seed = 0;
  std::optional<std::string> dtype;
  std::string tokenizer;
  bool ascii_tokenizer = false;
  bool force = false;
  bool list = false;
};

int run_synth(const SynthArgs& a) {
  if (a.list) {
    for (const auto& p : synth_presets()) std::cout << fmt::format("{:<16} {}\n", p.name, p.description);
    return kExitOk;
  }
  if (a.preset.empty()) throw UsageError("synth: --preset NAME is required (see --list)");
  if (a.out.empty()) throw UsageError("synth: --out DIR is required");
  SynthOptions o;
  o.preset = a.preset;
  o.out = a.out;
  o.seed = a.seed;
  o.force = a.force;
  o.ascii_tokenizer = a.ascii_tokenizer;
  if (a.dtype) o.dtype = parse_dtype(*a.dtype);
  synth_preset(a.preset);  // unknown preset: fail before touching the tokenizer or disk
  if (!a.tokenizer.empty()) {
    // The tokenizer's vocabulary sets the model's, and its BOS/EOS strings its special ids.
    auto tok = Tokenizer::load(a.tokenizer);
    o.tokenizer_dir = a.tokenizer;
    o.vocab_size = tok->vocab_size();
    if (auto id = tok->bos_token().empty() ? std::nullopt : tok->token_to_id(tok->bos_token())) o.bos_token_id = *id;
    if (auto id = tok->eos_token().empty() ? std::nullopt : tok->token_to_id(tok->eos_token()))
      o.eos_token_ids = {*id};
  }
  const auto r = write_synthetic_model(o);
  for (const auto& f : r.removed)
    std::cerr << "synth: removed " << f.string() << " (the replaced model's; --force)\n";
  std::cout << fmt::format("wrote {} ({} preset, seed {}): {} parameters, {:.1f} MB model.safetensors\n",
                           r.dir.string(), a.preset, a.seed, r.n_params, r.bytes / 1e6);
  return kExitOk;
}

const Registrar reg{{"synth", "write a random-weight model (real or tiny shapes) in Hugging Face layout",
                     [](CLI::App& sub) -> std::function<int()> {
                       auto a = std::make_shared<SynthArgs>();
                       sub.add_option("--preset", a->preset, "preset name (see --list)");
                       sub.add_option("--out,-o", a->out, "output directory (absent or empty)");
                       sub.add_option("--seed", a->seed, "random seed (default 0)");
                       sub.add_option("--dtype", a->dtype, "stored dtype: bf16 | fp16 | fp32 "
                                                           "(default: the preset's)");
                       auto* tok_opt = sub.add_option("--tokenizer", a->tokenizer,
                                      "copy tokenizer files from this directory; its vocab size "
                                      "sets the model's");
                       sub.add_flag("--ascii-tokenizer", a->ascii_tokenizer,
                                    "write a generated BPE tokenizer.json of printable ASCII pieces "
                                    "sized to the vocab (random weights print readable text)")
                           ->excludes(tok_opt);
                       sub.add_flag("--force", a->force, "write into a non-empty directory");
                       sub.add_flag("--list", a->list, "list the presets");
                       return [a] { return run_synth(*a); };
                     }}};

}  // namespace
}  // namespace llmport::cli
