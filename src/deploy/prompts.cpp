#include "deploy/prompts.hpp"

#include "llmport/error.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/verify.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

std::shared_ptr<const RecordFile> golden_records(const ReferenceSpec& ref) {
  if (ref.kind != "golden") return nullptr;
  static std::map<std::string, std::shared_ptr<const RecordFile>> cache;
  auto& slot = cache[ref.file.string()];
  if (!slot) slot = std::make_shared<const RecordFile>(read_record_file(ref.file));
  return slot;
}

std::vector<int> first_prompt_ids(Context& ctx) {
  if (auto g = golden_records(ctx.ref)) {
    if (g->sequences.empty()) throw UsageError(ctx.ref.file.string() + ": no sequences");
    return g->sequences.front().prompt_ids;
  }
  std::vector<PromptSpec> set;
  if (!ctx.opt.prompts.empty()) {
    set = read_prompt_file(ctx.opt.prompts);
  } else if (!Tokenizer::exists(ctx.m.model_dir)) {
    // No tokenizer: verify's built-in id set, so phase 0/2 and verify see the same prompts.
    const int context = ctx.cfg.max_seq > 0 ? ctx.cfg.max_seq : ctx.cfg.max_position_embeddings;
    set = builtin_id_prompts(ctx.cfg.vocab_size, context);
  } else {
    fs::path base = prompt_set_dir() / "base.json";
    if (fs::exists(base)) set = read_prompt_file(base);
  }
  if (set.empty())
    throw UsageError("no prompt for the deployment's own checks: pass --reference golden:FILE or "
                     "--prompts FILE");
  const auto& p = set.front();
  if (p.ids) return *p.ids;
  if (!Tokenizer::exists(ctx.m.model_dir))
    throw UsageError(ctx.m.model_dir.string() +
                     ": no tokenizer.json, so text prompts cannot be used: pass --reference "
                     "golden:FILE or --prompts FILE with prompt_ids");
  auto tok = Tokenizer::load(ctx.m.model_dir);
  return tok->encode(p.text.value_or(""));
}

int longest_golden_sequence(const ReferenceSpec& ref) {
  auto g = golden_records(ref);
  if (!g) return 0;
  int best = 0;
  std::size_t len = 0;
  for (std::size_t i = 0; i < g->sequences.size(); ++i) {
    std::size_t n = g->sequences[i].prompt_ids.size();
    if (n > len && n <= 512) {
      len = n;
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::vector<int> timing_ids(int n, int vocab) {
  std::vector<int> ids(static_cast<std::size_t>(n));  // [n]
  for (int i = 0; i < n; ++i)
    ids[static_cast<std::size_t>(i)] = static_cast<int>((1 + 7919LL * i) % vocab);
  return ids;
}

}  // namespace llmport::deploy
