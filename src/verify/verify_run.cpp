// The verify gate: prompts -> reference trajectories -> engine free-running and
// teacher-forced runs -> verdict, counters and report.
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <ctime>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "llmport/chat_template.hpp"
#include "llmport/error.hpp"
#include "llmport/kernel_cache.hpp"
#include "llmport/model_config.hpp"
#include "llmport/quant.hpp"
#include "llmport/registry.hpp"
#include "llmport/runner.hpp"
#include "llmport/tokenizer.hpp"
#include "verify/reference_text.hpp"
#include "llmport/verify.hpp"
#include "llmport/weights.hpp"
#include "verify/format.hpp"
#include "verify/golden_layers.hpp"
#include "verify/quant_cost.hpp"
#include "verify/record_checks.hpp"
#include "verify/reference_program.hpp"
#include "verify/self_match_memo.hpp"
#include "verify/self_match_sides.hpp"

namespace llmport {
namespace fs = std::filesystem;
using verify_detail::fmt_g;
using verify_detail::format_ids;
using verify_detail::format_top;

namespace {

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// One prompt ready to run: ids and, with a golden, the reference trajectory.
struct Prepared {
  std::string name;
  std::optional<std::string> text;
  std::vector<int> ids;
  const RecordSequence* golden = nullptr;
};

// Encodes a text prompt: raw text with the tokenizer's special tokens (BOS), or the
// instruct rendering (chat module's instruct_prompt_ids: one user turn, generation
// prompt, no special tokens added since the template writes them).
std::vector<int> encode_prompt(const Tokenizer& tok, const std::string& text, bool chat) {
  if (!chat) return tok.encode(text);
  return instruct_prompt_ids(tok, "", text);
}

void check_ids(const std::vector<int>& ids, const ModelConfig& cfg, int n_steps, const std::string& where,
               const RecordFile* ref = nullptr) {
  if (ids.empty()) throw UsageError(where + ": empty prompt");
  for (int id : ids)
    if (id < 0 || id >= cfg.vocab_size)
      throw UsageError(where + ": token id " + std::to_string(id) + " outside the vocabulary [0, " +
                       std::to_string(cfg.vocab_size) + ")" + verify_detail::other_model_hint(ref));
  // The last generated token is never fed back: n_prompt + n_steps - 1 positions (as run).
  const int64_t need = static_cast<int64_t>(ids.size()) + n_steps - 1;
  if (cfg.max_seq > 0 && need > cfg.max_seq)
    throw UsageError(where + ": prompt of " + std::to_string(ids.size()) + " tokens + " + std::to_string(n_steps) +
                     " steps - 1 exceeds the context of " + std::to_string(cfg.max_seq) + " tokens");
}

std::string tf_failure(const PromptVerdict& pv, const TeacherForcedStep& s) {
  std::string why = !s.reference_in_engine_top ? "the reference token is not in the engine top-5"
                                               : "the engine token is not in the reference top-5";
  if (std::isinf(s.kl)) why = "engine logits are not finite (NaN/inf)";
  return "prompt " + pv.name + " step " + std::to_string(s.step) + " (teacher-forced): " + why +
         " (engine token " + std::to_string(s.engine_top1) + ", reference token " +
         std::to_string(s.reference_token) + "); engine top-5 " + format_top(s.engine_top) +
         ", reference top-5 " + format_top(s.reference_top);
}

// Independent = by kind (not the oracle), by provenance (assess_provenance) and by
// content (no llmport computation reproduces any of its sequences bit for bit).
void decide_independence(VerifyResult& res) {
  for (const auto& m : res.self_matches)
    if (m.compared > 0 && m.share() >= kSelfMatchShare && res.independence_finding.empty())
      res.independence_finding = "content: sequence " + m.sequence + ": " + fmt_g(100.0 * m.share(), 4) + "% of " +
                                 std::to_string(m.compared) + " compared logits equal llmport's " + m.against +
                                 " output bit for bit" + (m.shifted ? " or shifted by a constant" : "");
  // No one computation reached the share: the steps each copied whole from some one of them.
  for (const auto& m : res.self_match_steps)
    if (m.compared > 0 && m.share() >= kSelfMatchShare && res.independence_finding.empty())
      res.independence_finding = "content: sequence " + m.sequence + ": " + std::to_string(m.identical) + " of " +
                                 std::to_string(m.compared) +
                                 " steps have every compared logit equal to one of llmport's computations' (bit for "
                                 "bit or shifted by a constant), the steps taken from several";
  // Not bit for bit: moved in the last bits. The whole file's rows come after the sequences'.
  for (const auto& c : res.copy_directions)
    if (c.copied() && res.independence_finding.empty())
      res.independence_finding =
          "content: " + (c.sequence == "all" ? std::string("all sequences") : "sequence " + c.sequence) +
          ": its logits differ from llmport's " + c.against + " output (rms " + fmt_g(c.rms_d, 3) +
          ") in no relation to that computation's own rounding: the slope of (reference - " + c.against +
          ") on (fp64 computation - " + c.against + ") is " + fmt_g(c.beta, 2) + " +- " + fmt_g(c.se, 2) + " over " +
          std::to_string(c.n) + " logits, where an independent fp32 reference measures ~0.5 (llmport output moved "
          "in its last bits)";
  res.reference_independent = res.independence_finding.empty();
}

// Of a sequence's row against one computation, what keeps it from the other sequences'
// pooled direction, else "": too many logits too far to fit (honest goldens: at most 1.6%
// of a sequence), or a slope on a copy's side of kCopyDirectionBeta and kCopyDirectionSigmas
// combined errors below the others' pool (honest goldens: at most 3.3 errors below, and
// then at 0.3 or more). A sequence copied from llmport into an honest file hides in the
// pool otherwise (one of mistral-tiny's four, from a model damaged only on its inputs,
// passed: -0.16 +- 0.12, 4.6 errors below the others).
std::string sequence_apart(const CopyDirection& c, const CopyDirection& all) {
  const CopyDirection pooled = pooled_without(all, c);
  const int64_t total = c.n + c.far;
  if (total >= kCopyDirectionMinEntries && static_cast<double>(c.far) > kCopyDirectionFarShare * static_cast<double>(total))
    return "sequence " + c.sequence + ": " + std::to_string(c.far) + " of " + std::to_string(total) +
           " logits too far from llmport's " + c.against + " output to fit";
  const double gap = pooled.beta - c.beta, se = std::hypot(pooled.se, c.se);
  if (c.n >= kCopyDirectionMinEntries && pooled.n >= kCopyDirectionMinEntries && c.beta < kCopyDirectionBeta &&
      gap > kCopyDirectionSigmas * se)
    return "sequence " + c.sequence + ": slope " + fmt_g(c.beta, 2) + " +- " + fmt_g(c.se, 2) + " against llmport's " +
           c.against + " output, " + fmt_g(gap / se, 2) + " combined errors below the other sequences' " +
           fmt_g(pooled.beta, 2) + " (a sequence unlike the others: copied into the file?)";
  return "";
}

// A reference not found a copy must still show, per fp32 computation over all its
// sequences and in each of them, the direction an independent computation's error takes:
// a copy printed with 6 digits or moved by noise 4x llmport's rounding decides neither way
// and passed plain, and so did one sequence copied into an honest file.
void decide_independence_shown(VerifyResult& res) {
  if (!res.reference_independent) return;
  bool any = false;
  for (const auto& c : res.copy_directions) {
    if (c.sequence != "all" || c.computations != 1) continue;
    any = true;
    if (c.independent()) continue;
    const int64_t total = c.n + c.far;
    res.independence_unshown =
        "its logits do not show an independent computation's rounding against llmport's " + c.against +
        " output (slope " + fmt_g(c.beta, 2) + " +- " + fmt_g(c.se, 2) + " over " + std::to_string(c.n) +
        " logits, " + std::to_string(c.far) + " of " + std::to_string(total) +
        " too far to fit; an independent fp32 reference measures ~0.5 +- 0.05 with few far, a copy 0): "
        "printed or perturbed too coarsely to tell from llmport's own output";
    return;
  }
  if (!any) {
    res.independence_unshown = "the copy-direction check had no logits to read (no fp32 computation compared)";
    return;
  }
  for (const auto& c : res.copy_directions) {
    if (c.sequence == "all" || c.computations != 1) continue;
    const auto pooled = std::ranges::find_if(res.copy_directions, [&](const CopyDirection& p) {
      return p.sequence == "all" && p.against == c.against && p.computations == 1;
    });
    if (pooled == res.copy_directions.end()) continue;
    if (std::string why = sequence_apart(c, *pooled); !why.empty()) {
      res.independence_unshown = std::move(why);
      return;
    }
  }
}

// "Y at the most favourable values the printed digits allow (log-probabilities +-R nats)":
// the within-digits KL beside the half unit that bought it, in every line that shows one.
std::string at_favourable_values(double within_kl, double resolution) {
  return fmt_g(within_kl) + " at the most favourable values the printed digits allow (log-probabilities +-" +
         fmt_g(resolution, 2) + " nats)";
}

// Stop ids the model's tokenizer files know as ordinary text ("426 ('.') (eos_token_id)"): a
// real model stops at a control token (</s>, <|im_end|>, <|eot_id|>), never at a word or a
// period. The stop ids are config/generation_config's eos_token_id and, for chat (run
// --chat, instruct prompts, serve's chat endpoint), the tokenizer's eos_token too.
// tokenizer.json's added tokens say which are special; without one, tokenizer_config.json's
// added_tokens_decoder does. "" when neither file exists.
std::string ordinary_stop_ids(const ModelConfig& cfg, const Tokenizer* tok, const fs::path& dir) {
  std::string out;
  auto add = [&out](int id, const std::string& what) { out += (out.empty() ? "" : ", ") + std::to_string(id) + what; };
  if (tok) {
    const std::vector<int> model = cfg.stop_ids();
    for (const int id : chat_stop_ids(model, *tok))  // the set chat stops at: model ids and eos_token
      if (id >= 0 && id < tok->vocab_size() && !tok->is_special(id))
        add(id, " ('" + tok->id_to_token(id) + "') (" +
                    (std::binary_search(model.begin(), model.end(), id) ? "eos_token_id"
                                                                         : "the tokenizer's eos_token, a stop id of chat") +
                    ")");
    return out;
  }
  if (!fs::exists(dir / "tokenizer_config.json")) return out;
  const std::vector<int> special = tokenizer_config_special_ids(dir);
  for (const int id : cfg.stop_ids())
    if (!std::binary_search(special.begin(), special.end(), id))
      add(id, " (eos_token_id; no special entry of added_tokens_decoder)");
  return out;
}

// What keeps a passing run from a plain PASS, independence first (docs/verification.md).
std::vector<std::string> verdict_caps(const VerifyResult& res, bool builtin_set) {
  std::vector<std::string> caps;
  if (!res.reference_independent) caps.push_back("reference not independent: " + res.independence_finding);
  if (!res.independence_unshown.empty())
    caps.push_back("reference independence not shown by its content: " + res.independence_unshown);
  const int need_prompts = builtin_set ? kDefaultPrompts : kMinPrompts;
  const int need_steps = builtin_set ? kDefaultSteps : kMinSteps;
  const int distinct = res.distinct_prompts();
  if (distinct < need_prompts || res.n_steps < need_steps)
    caps.push_back("depth: " + std::to_string(distinct) + " prompts x " + std::to_string(res.n_steps) +
                   " steps, fewer than the required " + std::to_string(need_prompts) + " x " +
                   std::to_string(need_steps) +
                   (distinct < res.n_prompts ? " (" + std::to_string(res.n_prompts - distinct) + " repeated prompts)"
                                             : std::string()));
  else if (const int steps = res.distinct_steps(); steps < need_prompts * need_steps)
    caps.push_back("depth: the " + std::to_string(res.n_prompts) + " prompts x " + std::to_string(res.n_steps) +
                   " steps compute only " + std::to_string(steps) + " distinct steps (a prompt that continues "
                   "another's trajectory repeats its steps), fewer than the required " +
                   std::to_string(need_prompts) + " x " + std::to_string(need_steps));
  if (res.dtype == "fp32" && kl_bound_for(DType::F32, res.reference_dtype) != kKlBoundFp32)
    caps.push_back("the reference computed in " + res.reference_dtype +
                   ": it cannot check an fp32 engine at fp32 precision (bf16 KL bound used)");
  // The same claim widens the reference check of a lower-precision engine: a golden that
  // says "bfloat16" would hold llmport's shared forward only to the bf16 bound, where a
  // fault (or a golden scaled by 1.01) that the fp32 bound catches passes unseen.
  if (res.dtype != "fp32" && res.reference_checked && res.reference_check_bound != kKlBoundFp32)
    caps.push_back("the reference computed in " + res.reference_dtype + ": llmport's shared forward is checked "
                   "against it at the bound " + fmt_g(res.reference_check_bound) + ", not at fp32 precision");
  if (res.reference_kind != "oracle" && res.reference_top_entries < res.top_k)
    caps.push_back("the reference holds only " + std::to_string(res.reference_top_entries) +
                   " top entries per step, fewer than the top-" + std::to_string(res.top_k) + " the gates compare");
  if (res.reference_program.is_object() && !res.reference_program.value("shipped", true))
    caps.push_back(res.reference_program.value("kind", std::string("hf")) + " reference program " +
                   res.reference_program.value("program", std::string()) + " is not the shipped tools/" +
                   res.reference_program.value("script", std::string("hf_reference.py")));
  // The reference check (llmport's fp32 computation against the golden) met its fp32 bound
  // only within the golden's printed digits. On a bf16 or quantized engine it is what holds
  // the shared forward to the golden beyond the engine's wider bound: a golden rounded to 2
  // decimals hid a v_proj scaled by 1.012 there with a warning only. As the fp32 engine's
  // own gate, a pass resting on missing digits is capped.
  if (res.reference_checked && res.reference_check_pass &&
      !(res.reference_check_mean_kl_printed <= res.reference_check_bound))
    caps.push_back("the reference's printed digits: the reference check (llmport's " + res.reference_check_dtype +
                   " computation, not independent) has mean KL " + fmt_g(res.reference_check_mean_kl_printed) +
                   " at its values as printed, above the bound " + fmt_g(res.reference_check_bound) + "; " +
                   at_favourable_values(res.reference_check_mean_kl, res.reference_print_resolution) +
                   ": too few digits to prove it");
  if (res.full_kl_pass() && res.gate != "kld" && res.full_kl_steps > 0 && !(res.mean_full_kl <= res.kl_bound))
    caps.push_back("the reference's printed digits: its " + std::to_string(res.full_kl_steps) +
                   " steps with full logits have mean KL " + fmt_g(res.mean_full_kl) +
                   " at their values as printed, above the bound " + fmt_g(res.kl_bound) + "; " +
                   fmt_g(res.mean_full_kl_within_print) + " within their digits: too few digits to prove it");
  if (res.reference_checked && res.reference_check_pass && res.reference_check_mean_full_kl_printed > 0 &&
      !(res.reference_check_mean_full_kl_printed <= res.reference_check_bound))
    caps.push_back("the reference's printed digits: the reference check's steps with full logits have mean KL " +
                   fmt_g(res.reference_check_mean_full_kl_printed) + " at their values as printed, above the bound " +
                   fmt_g(res.reference_check_bound) + ": too few digits to prove it");
  if (res.mean_kl_pass() && !(res.mean_kl <= res.kl_bound))
    caps.push_back("the reference's printed digits: mean KL " + fmt_g(res.mean_kl) + " at its values as printed " +
                   "exceeds the bound " + fmt_g(res.kl_bound) + "; " +
                   at_favourable_values(res.mean_kl_within_print, res.reference_print_resolution) +
                   ": too few digits to prove the bound");
  // The independent reference disagreeing with llmport's own fp32 computation does not
  // vanish from the verdict because the engine does not compute in fp32 (deploy's phase 3
  // caps it too).
  if (!res.golden_layers_gating && !res.golden_layers_departs.empty())
    caps.push_back("the golden's hidden states depart from llmport's fp32 oracle (not gating: the engine does not "
                   "compute in fp32): " + res.golden_layers_departs);
  // A top-k and a rest bucket constrain nothing among the ids outside the top-k: a model
  // with unlisted embedding rows swapped reads the honest model's KL on every such step.
  if (res.teacher_forced_steps > 0 && res.full_kl_steps == 0)
    caps.push_back("the reference gives only its top-" + std::to_string(res.top_k) +
                   " logits at every step (no step holds the full logits): probability moved among the other ids "
                   "is not seen");
  // The ids agree but the text does not: llmport's tokenizer.json prints (or reads) other
  // words than the reference's did, or the golden's text contradicts its own ids. Either
  // way the PASS does not cover the text a user sees.
  if (!res.reference_text_differs.empty())
    caps.push_back("the reference's printed text is not what llmport's tokenizer makes of its ids: " +
                   res.reference_text_differs);
  if (!res.ordinary_stop_ids.empty())
    caps.push_back("generation stops at ordinary text: stop id " + res.ordinary_stop_ids +
                   " is not a special token of the model's tokenizer files, and no reference checks where "
                   "generation stops");
  if (!res.tokenizer_files_disagree.empty())
    caps.push_back("the model's tokenizer files disagree (llmport reads tokenizer.json as the Rust tokenizers "
                   "library does; transformers applies tokenizer_config.json on top of it and encodes or decodes "
                   "otherwise): " + res.tokenizer_files_disagree);
  if (!res.model_files_not_run.empty())
    caps.push_back("the model's files ask for what llmport does not run, so transformers computes or generates "
                   "otherwise: " + res.model_files_not_run);
  if (res.backend == "reference") caps.push_back("the engine runner uses the reference backend, not the target's kernels");
  if (!res.fault.empty()) caps.push_back("a test-only fault was planted in the engine: " + res.fault);
  if (res.top_k < kTopK)
    caps.push_back("bounds loosened by the user: top-" + std::to_string(res.top_k) + " token sets, fewer than the " +
                   "default top-" + std::to_string(kTopK));
  // A quantized dtype's defaults are derived for the model (derived_kld_gate): said so.
  const std::string which = res.dtype + (res.gate == "kld" ? " bound derived for this model" : " default");
  if (res.kl_bound > res.default_kl_bound)
    caps.push_back("bounds loosened by the user: mean KL <= " + fmt_g(res.kl_bound) + ", above the " + which + " " +
                   fmt_g(res.default_kl_bound));
  if (res.gate == "kld" && res.format_kl_bound > 0 && res.default_kl_bound > res.format_kl_bound &&
      !(res.mean_kl_within_print <= res.format_kl_bound))
    caps.push_back("the " + res.dtype + " format costs this model more than its default bound: mean KL " +
                   fmt_g(res.mean_kl_within_print) + " passes only the bound widened for this model (" +
                   fmt_g(res.default_kl_bound) + ", from the predicted cost " + fmt_g(res.predicted_mean_kl) +
                   "), not the " + res.dtype + " bound " + fmt_g(res.format_kl_bound) +
                   ": as close as the format gets here, not its usual fidelity");
  if (res.gate == "kld" && res.format_min_top1 > 0 && res.default_min_top1 < res.format_min_top1 &&
      res.top1_agreement < res.format_min_top1)
    caps.push_back("the " + res.dtype + " format costs this model more than its default bound: top-1 agreement " +
                   fmt_g(100.0 * res.top1_agreement, 4) + "% passes only the bound widened for this model (" +
                   fmt_g(100.0 * res.default_min_top1, 4) + "%), not the " + res.dtype + " bound " +
                   fmt_g(100.0 * res.format_min_top1, 4) + "%");
  if (res.gate == "kld" && res.min_top1 < res.default_min_top1)
    caps.push_back("bounds loosened by the user: top-1 agreement >= " + fmt_g(100.0 * res.min_top1, 4) +
                   "%, below the " + which + " " + fmt_g(100.0 * res.default_min_top1, 4) + "%");
  return caps;
}

// What a run compares: the prompts with their ids and, for golden and hf, the reference
// records they replay.
struct Plan {
  std::shared_ptr<RecordFile> golden;  // golden or hf records; null for the oracle
  std::vector<Prepared> prompts;
  int n_steps = 0;
  bool builtin_set = false;  // a built-in prompt set: oracle and hf run all of it by default
};

Plan plan_golden(const fs::path& gf, VerifyResult& res) {
  if (gf.empty()) throw UsageError("--reference golden:FILE needs a file");
  Plan plan;
  plan.golden = std::make_shared<RecordFile>(read_record_file(gf));
  for (const auto& w : plan.golden->unused_field_contradictions)
    res.warnings.push_back(w + " (a field verify does not use; the file may have been edited)");
  res.reference_kind = "golden";
  res.reference_source = gf.string() + (plan.golden->producer.empty() ? "" : " (" + plan.golden->producer + ")");
  res.reference_dtype = plan.golden->compute_dtype;
  res.prompt_set = "golden";
  plan.n_steps = plan.golden->n_steps;
  // Named here with the file, not later as "verify: number of steps must be > 0" or a KL
  // gate that "cannot be computed" for some step of some sequence.
  if (plan.n_steps <= 0) throw ConfigError(gf.string() + ": holds 0 steps per sequence: nothing to compare");
  for (std::size_t i = 0; i < plan.golden->sequences.size(); ++i) {
    try {
      (void)kl_kind_for(plan.golden->sequences[i].steps);
    } catch (const UsageError& e) {
      throw ConfigError(gf.string() + ": sequence " + std::to_string(i) + " (" + plan.golden->sequences[i].name +
                        "): " + e.what());
    }
  }
  bool any_text = false;
  for (const auto& s : plan.golden->sequences) {
    plan.prompts.push_back({s.name, s.prompt, s.prompt_ids, &s});
    any_text = any_text || s.prompt_rendering != "ids";
  }
  res.prompt_rendering = any_text ? plan.golden->sequences[0].prompt_rendering + " (golden prompt ids)" : "ids";
  return plan;
}

// The prompt set of an oracle/hf run: --prompts FILE, else the built-in set the model
// calls for (ids without a tokenizer, instruct with a chat template, else base).
std::vector<PromptSpec> choose_prompt_set(const VerifyOptions& opt, const ModelConfig& cfg, const Tokenizer* tok,
                                          int n_steps, Plan& plan, bool& chat, VerifyResult& res) {
  std::vector<PromptSpec> specs;
  chat = false;
  if (opt.prompts_file) {
    std::optional<bool> stated;
    specs = read_prompt_file(*opt.prompts_file, &stated);
    res.prompt_set = "file:" + opt.prompts_file->string();
    chat = tok && !tok->chat_template().empty();
    if (stated && *stated && !chat)
      throw UsageError(opt.prompts_file->string() + ": chat: true, but the model has no chat template" +
                       (tok ? "" : " (no tokenizer.json)"));
    if (stated) chat = *stated;
  } else if (!tok) {
    // No tokenizer: text prompts are impossible, so the built-in deterministic id set.
    const int context = cfg.max_seq > 0 ? cfg.max_seq : cfg.max_position_embeddings;
    specs = builtin_id_prompts(cfg.vocab_size, context, n_steps);
    res.prompt_set = "ids";
    res.warnings.push_back("the model has no tokenizer: built-in deterministic id prompts (seed " +
                           std::to_string(kIdPromptSeed) + ", ids < vocab_size " + std::to_string(cfg.vocab_size) + ")");
    plan.builtin_set = true;
  } else {
    chat = !tok->chat_template().empty();
    res.prompt_set = chat ? "instruct" : "base";
    specs = read_prompt_file(prompt_set_dir() / (res.prompt_set + ".json"));
    plan.builtin_set = true;
  }
  if (plan.builtin_set && opt.quick && static_cast<int>(specs.size()) > kQuickPrompts) specs.resize(kQuickPrompts);
  res.full = !(plan.builtin_set && opt.quick);
  res.prompt_rendering = chat ? "chat_template" : res.prompt_set == "ids" ? "ids" : "raw";
  return specs;
}

// Token ids of each prompt (given ids, or the text through the tokenizer and, for an
// instruct set, the chat template; a template llmport cannot render falls back to raw text
// for both sides, said in the report).
// A prompt that gives both "text" and "prompt_ids": the ids must be the text's encoding,
// raw or (for an instruct set) rendered through the chat template. UsageError otherwise.
// `where` names the prompt file.
void check_text_matches_ids(const Tokenizer& tok, const PromptSpec& p, bool chat, const std::string& where) {
  const std::vector<int>& ids = *p.ids;
  if (encode_prompt(tok, *p.text, false) == ids) return;
  if (chat) {
    try {
      if (encode_prompt(tok, *p.text, true) == ids) return;
    } catch (const ConfigError&) {
    }
  }
  const std::vector<int> raw = encode_prompt(tok, *p.text, false);
  std::size_t at = 0;
  while (at < raw.size() && at < ids.size() && raw[at] == ids[at]) ++at;
  throw UsageError(where + ": prompt '" + p.name + "': \"text\" does not encode to its \"prompt_ids\" (they differ at " +
                   "index " + std::to_string(at) + "; the text has " + std::to_string(raw.size()) + " ids, prompt_ids " +
                   std::to_string(ids.size()) + "): give one of them");
}

std::vector<Prepared> encode_prompts(const std::vector<PromptSpec>& specs, const Tokenizer* tok, bool& chat,
                                     const fs::path& model_dir, const std::string& where, VerifyResult& res) {
  std::vector<Prepared> out;
  for (const auto& p : specs) {
    Prepared pp{p.name, p.text, {}, nullptr};
    if (p.ids) {
      pp.ids = *p.ids;
      // Both given: the ids run and the text labels the report, so they must say the same
      // (a "Hi" that ran [1, 2] was reported as "Hi").
      if (p.text && tok) check_text_matches_ids(*tok, p, chat, where);
    } else if (!tok) {
      throw UsageError(model_dir.string() + " has no tokenizer.json: give prompt ids (--prompts FILE with "
                       "\"prompt_ids\") or a golden with id sequences (--reference golden:FILE)");
    } else if (chat) {
      try {
        pp.ids = encode_prompt(*tok, *p.text, true);
      } catch (const ConfigError& e) {
        chat = false;
        res.prompt_rendering = std::string("raw (chat template not rendered: ") + e.what() + ")";
        res.warnings.push_back("instruct prompts fed as raw text: " + std::string(e.what()));
        pp.ids = encode_prompt(*tok, *p.text, false);
      }
    } else {
      pp.ids = encode_prompt(*tok, *p.text, false);
    }
    out.push_back(std::move(pp));
  }
  return out;
}

// Runs the reference program (tools/hf_reference.py or tools/numpy_reference.py) on the
// prompt set. transformers tokenizes texts itself, so its ids drive both sides; the numpy
// program has no tokenizer and gets the ids llmport encoded (the tokenizer has its own
// independent checks: tests/tokenizer).
void attach_program_reference(const VerifyOptions& opt, const ModelConfig& cfg, const WeightStore& weights,
                              const fs::path& dir, std::vector<PromptSpec> specs, bool chat, Plan& plan,
                              VerifyResult& res) {
  const auto& program = verify_detail::reference_program(opt.reference);
  const fs::path out_dir = opt.report_dir.empty()
                               ? fs::temp_directory_path() / ("llmport-" + program.kind + "-" + std::to_string(::getpid()))
                               : opt.report_dir;
  fs::create_directories(out_dir);
  const fs::path out = out_dir / (program.kind + "_reference.json");
  std::vector<std::string> extra;
  if (program.tokenizes) {
    const DType engine_dtype = opt.engine.dtype.value_or(checkpoint_dtype(cfg, weights));
    if (engine_dtype == DType::F32) extra = {"--dtype", "float32"};
  } else {
    for (std::size_t i = 0; i < specs.size(); ++i) specs[i].ids = plan.prompts[i].ids;
  }
  res.reference_program =
      verify_detail::run_reference_program(program, opt.python, dir, specs, chat, plan.n_steps, out, extra);
  plan.golden = std::make_shared<RecordFile>(read_record_file(out));
  res.reference_program["versions"] = plan.golden->versions;
  res.reference_source = out.string() + " (" + res.reference_program.value("program", std::string()) + ")";
  res.reference_dtype = plan.golden->compute_dtype;
  if (plan.golden->sequences.size() != plan.prompts.size())
    throw UsageError(out.string() + ": has " + std::to_string(plan.golden->sequences.size()) + " sequences for " +
                     std::to_string(plan.prompts.size()) + " prompts");
  for (std::size_t i = 0; i < plan.prompts.size(); ++i) {
    plan.prompts[i].ids = plan.golden->sequences[i].prompt_ids;
    plan.prompts[i].golden = &plan.golden->sequences[i];
  }
  plan.n_steps = plan.golden->n_steps;
}

Plan plan_reference(const fs::path& model_dir, const VerifyOptions& opt, const ModelConfig& cfg,
                    const WeightStore& weights, const Tokenizer* tok, const fs::path& tok_dir, VerifyResult& res) {
  const std::string& ref = opt.reference;
  check_prompts_beside_reference(ref, opt.prompts_file.value_or(fs::path()));
  if (ref.rfind("golden:", 0) == 0) return plan_golden(ref.substr(7), res);
  if (ref != "oracle" && ref != "hf" && ref != "numpy")
    throw UsageError("--reference: unknown value '" + ref + "' (expected golden:FILE, oracle, hf or numpy)");
  res.reference_kind = ref;
  Plan plan;
  plan.n_steps = opt.n_steps;
  bool chat = false;
  const auto specs = choose_prompt_set(opt, cfg, tok, plan.n_steps, plan, chat, res);
  const std::string where = opt.prompts_file ? "--prompts " + opt.prompts_file->string() : "--prompts";
  plan.prompts = encode_prompts(specs, tok, chat, model_dir, where, res);
  // Before a reference program runs on them: its records would carry the error instead,
  // named by a file of llmport's own making.
  for (const auto& p : plan.prompts)
    check_ids(p.ids, cfg, plan.n_steps, (opt.prompts_file ? where + ": " : std::string()) + "prompt " + p.name);
  if (ref != "oracle") {
    attach_program_reference(opt, cfg, weights, tok_dir, specs, chat, plan, res);
  } else {
    res.reference_source = "llmport reference kernels (fp32)";
    res.reference_dtype = "fp32";
    res.independence_finding = "oracle";
  }
  return plan;
}

// Whether the engine under test runs its backend's default tile configs (no registry entry
// used): then the side of its level and dtype computes what it computed.
bool engine_on_default_configs(const EngineOptions& o) { return !o.kernels || o.kernels->registry_used.empty(); }

// Per golden sequence (keyed by its Prepared), the steps whose compared top-k all count as
// one of llmport's computations' (count_self_match returns true): the union over every
// computation, so a golden that takes each step from another one (the oracle, the engine,
// its prefill path, another ISA level), none reaching kSelfMatchShare alone, is still seen.
using CopiedSteps = std::map<const Prepared*, std::vector<char>>;

void mark_copied(CopiedSteps& copied, const Prepared& p, std::size_t k, bool whole) {
  auto& v = copied[&p];
  v.resize(p.golden->steps.size(), 0);
  if (whole) v[k] = 1;
}

// Whether `e` is an unquantized fp32 computation, the kind the copy-direction check reads
// (CopyDirection): a bf16 or quantized one is far from an fp32 reference by its own rounding.
bool computes_fp32(const Engine& e) {
  return e.dtype() == DType::F32 && e.quant() == QuantType::None && e.quant_lm_head() == QuantType::None;
}

// Teacher-forced decode along one golden sequence: the prompt's prefill, then one decode
// step per golden token (what `llmport run` computes). Every step: the union needs them all.
SelfMatch self_match_decode(EngineRunner& runner, const Prepared& p, const std::string& name, int top_k,
                            CopiedSteps& copied) {
  const auto& steps = p.golden->steps;
  SelfMatch m{name, p.name, 0, 0};
  m.fp32 = computes_fp32(runner.engine());
  runner.prefill(p.ids);
  int pos = static_cast<int>(p.ids.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (k > 0) runner.decode_step(steps[k - 1].token, pos++);
    mark_copied(copied, p, k, count_self_match(steps[k], runner.last_logits(), m, top_k));
  }
  return m;
}

// The prefill path along one golden sequence: step k's logits as the last row of a prefill
// of the prompt and the golden's first k tokens (what `llmport run --prompt-ids PREFIX -n 1`
// computes, one run per step), which sums in other orders than decode. Every row of a
// prefill equals the last row of the prefill of its prefix (tests/verify: per-row cpu
// kernels, the transposed attention path at any m > 1), so one forward of the whole
// sequence, in chunks of >= 2 rows, yields every step (quantized linears included: their
// "act" choice holds for every m); except where the lm_head of a single last row (a GEMV)
// sums unlike the all-rows GEMM (`literal`: the bf16 fp32-FMA GEMM, a registry entry): then
// one prefill per step.
SelfMatch self_match_prefill(EngineRunner& runner, const Prepared& p, const std::string& name, int top_k,
                             bool literal, CopiedSteps& copied) {
  const auto& steps = p.golden->steps;
  SelfMatch m{name, p.name, 0, 0};
  m.fp32 = computes_fp32(runner.engine());
  std::vector<int> seq = p.ids;
  for (std::size_t k = 0; k + 1 < steps.size(); ++k) seq.push_back(steps[k].token);
  const std::size_t first = p.ids.size() - 1;  // the row of step 0
  const std::size_t vocab = static_cast<std::size_t>(runner.engine().config().vocab_size);
  if (literal) {
    for (std::size_t k = 0; k < steps.size(); ++k) {
      runner.prefill(std::span<const int>(seq.data(), first + 1 + k));
      mark_copied(copied, p, k, count_self_match(steps[k], runner.last_logits(), m, top_k));
    }
    return m;
  }
  constexpr std::size_t kChunkRows = 64;  // bounds the [rows, vocab] logits held at once
  Engine& eng = runner.engine();
  eng.reset();
  for (std::size_t at = 0; at < seq.size();) {
    std::size_t len = std::min(kChunkRows, seq.size() - at);
    if (seq.size() - at - len == 1) --len;  // a 1-row chunk would take the decode path
    const auto rows = eng.forward(std::span<const int>(seq.data() + at, len), /*all_logits=*/true);
    for (std::size_t r = 0; r < len; ++r) {
      if (at + r < first) continue;
      const std::size_t k = at + r - first;
      const bool whole = count_self_match(steps[k], std::span<const float>(rows.data() + r * vocab, vocab), m, top_k);
      mark_copied(copied, p, k, whole);
    }
    at += len;
  }
  return m;
}

// The golden's part of a self-match memo key (verify/self_match_memo.hpp): every golden
// sequence's name and prompt ids, and each step's token and compared top-k (ids and logit
// bits), each field length-prefixed.
std::string golden_content_key(const std::vector<Prepared>& prompts, int top_k) {
  std::string bytes;
  auto put = [&](const void* data, std::size_t n) {
    bytes.append(reinterpret_cast<const char*>(&n), sizeof n);
    bytes.append(static_cast<const char*>(data), n);
  };
  put(&top_k, sizeof top_k);
  for (const Prepared& p : prompts) {
    if (!p.golden) continue;
    put(p.name.data(), p.name.size());
    put(p.ids.data(), p.ids.size() * sizeof(int));
    for (const StepRecord& st : p.golden->steps) {
      put(&st.token, sizeof st.token);
      const std::size_t n = std::min(st.top.size(), static_cast<std::size_t>(top_k));
      for (std::size_t i = 0; i < n; ++i) {
        put(&st.top[i].id, sizeof st.top[i].id);
        put(&st.top[i].logit, sizeof st.top[i].logit);
      }
    }
  }
  return content_hash(bytes.data(), bytes.size());
}

// One verify's self-match computations: each (computation, path) is looked up in the
// process's memo under `base` (model and golden content) and its own description, else run
// along every golden sequence and kept. Rows go to `out`, copied steps into `copied`.
using verify_detail::PathRun;
using verify_detail::SelfMatchMemo;

struct SideRuns {
  const std::vector<Prepared>& prompts;
  std::string base;
  std::vector<SelfMatch>& out;
  CopiedSteps& copied;
  int hits = 0, runs = 0;

  // count(p, marks) -> SelfMatch: one golden sequence, its copied steps into `marks`.
  template <class Count>
  void run(const std::string& what, Count&& count) {
    SelfMatchMemo& memo = SelfMatchMemo::process();
    const std::string key = base + " | " + what;
    std::optional<PathRun> r = memo.find(key);
    ++runs;
    if (r) {
      ++hits;
    } else {
      r.emplace();
      CopiedSteps marks;
      for (const Prepared& p : prompts)
        if (p.golden) {
          r->rows.push_back(count(p, marks));
          r->copied.push_back(marks[&p]);
        }
      memo.put(key, *r);
    }
    out.insert(out.end(), r->rows.begin(), r->rows.end());
    std::size_t i = 0;
    for (const Prepared& p : prompts) {
      if (!p.golden) continue;
      const std::vector<char>& steps = r->copied[i++];
      for (std::size_t k = 0; k < steps.size(); ++k) mark_copied(copied, p, k, steps[k] != 0);
    }
  }
};

// What a quantized side computes beyond its backend and level: the quantization, lm_head's,
// the activations chosen, the base dtype.
std::string quantized_numerics(const EngineOptions& o, DType base) {
  std::string d = precision_name(base, o.quant) + " lm_head " + std::string(quant_name(o.quant_lm_head)) + " act " +
                  (o.quant_act ? std::to_string(static_cast<int>(*o.quant_act)) : "default") + " base " +
                  std::string(dtype_name(base));
  for (const auto& [tensor, act] : o.quant_act_of_tensor) d += " " + tensor + "=" + std::to_string(static_cast<int>(act));
  return d;
}

// Teacher-forces llmport's other computations along every reference sequence and counts
// the reference's top-k logits they reproduce bit for bit: a golden copied from llmport's
// own output, in whole or in part, matches one of them exactly on the copied sequences; an
// independent one almost nowhere. Sides: the oracle and the cpu engine in fp32, bf16 and
// fp16 at every ISA level this machine runs, each distinct computation once (the engine
// under test's decode path is counted along the gate's own teacher-forced run), each cpu
// side on its decode and its prefill path; a quantized engine's quantization at every
// level and on the reference backend too. Every step of every sequence: on the first few
// steps alone, a golden whose first steps were honest and the rest the oracle's was a
// plain PASS, and the union of copied steps (`copied`) needs each computation's every step.
// `memo_base`: the model's and golden's content key (SelfMatchMemo); `log` says how many
// computations an earlier verify of this process had already run.
std::vector<SelfMatch> self_matches_of_llmport_kernels(const ModelConfig& cfg, const WeightStore& weights,
                                                      const EngineOptions& engine_opt, EngineRunner& engine_runner,
                                                      const std::vector<Prepared>& prompts, int top_k,
                                                      CopiedSteps& copied, const std::string& memo_base,
                                                      const std::function<void(const std::string&)>& log) {
  const RunnerInfo engine = engine_runner.info();
  std::vector<SelfMatch> out;
  const int threads = engine_opt.threads;
  SideRuns runs{prompts, memo_base + " threads " + std::to_string(threads), out, copied};
  // Both paths of a computation (the decode one unless already counted; literal: the
  // prefill path one prefill per step), its runner built only when the memo lacks a path.
  using MakeRunner = std::function<std::unique_ptr<EngineRunner>()>;
  auto both_paths = [&](const MakeRunner& make, const std::string& name, const std::string& numerics, bool decode,
                        bool literal) {
    std::unique_ptr<EngineRunner> runner;
    auto get = [&]() -> EngineRunner& {
      if (!runner) runner = make();
      return *runner;
    };
    if (decode)
      runs.run(name + " [" + numerics + "] decode", [&](const Prepared& p, CopiedSteps& marks) {
        return self_match_decode(get(), p, name, top_k, marks);
      });
    runs.run(name + " [" + numerics + "] prefill" + (literal ? " literal" : ""),
             [&](const Prepared& p, CopiedSteps& marks) {
               return self_match_prefill(get(), p, name + " (prefill path)", top_k, literal, marks);
             });
  };
  // The oracle's rows do not depend on the path (reference kernels: one order for any m).
  runs.run("oracle [reference fp32] decode", [&, oracle = std::unique_ptr<EngineRunner>()](
                                                 const Prepared& p, CopiedSteps& marks) mutable {
    if (!oracle) oracle = make_oracle_runner(cfg, weights, threads);
    return self_match_decode(*oracle, p, "oracle", top_k, marks);
  });
  // The oracle's formulas in fp64 at its fp32 op boundaries: the direction the fp32
  // computations' rounding points away from (copy_directions). Not a side for bit-identity:
  // any near-exact program rounds to its bits (an fp64 numpy reference matched ~55%).
  runs.run(std::string(kFp64Side) + " [reference fp64] decode",
           [&, fp64 = std::unique_ptr<EngineRunner>()](const Prepared& p, CopiedSteps&) mutable {
             if (!fp64) {
               EngineOptions o;
               o.backend = "reference";
               o.backend_level = "fp64";
               o.dtype = DType::F32;
               o.threads = threads;
               fp64 = std::make_unique<EngineRunner>(cfg, weights, o, "oracle");
             }
             CopiedSteps no_marks;
             return self_match_decode(*fp64, p, kFp64Side, top_k, no_marks);
           });
  // Every cpu level this machine runs, not only the engine's: a golden written by
  // `LLMPORT_CPU_ISA=avx2 llmport run` differs from the avx512 engine in the last bits and
  // would otherwise pass as independent. Each distinct computation once (self_match_sides);
  // one side at a time, so only one extra copy of the packed weights is alive.
  const bool engine_default = engine_on_default_configs(engine_opt);
  const bool quantized = engine_opt.quant != QuantType::None;
  for (const verify_detail::SelfMatchSide& side :
       verify_detail::self_match_sides(engine, engine_default && !quantized, threads, weights)) {
    EngineOptions o;
    o.backend = "cpu";
    o.backend_level = side.level;
    o.dtype = side.dtype;
    o.threads = threads;
    both_paths([&] { return std::make_unique<EngineRunner>(cfg, weights, o, "engine"); }, side.name,
               "cpu " + side.level + " " + side.numerics, !side.is_engine, side.lm_head_fma);
  }
  // A quantized engine: its quantization at every level (`LLMPORT_CPU_ISA=avx2 llmport run
  // --dtype q8_0`) and on the reference backend (`run --backend reference --dtype q8_0`).
  if (quantized) {
    const DType base = engine_opt.dtype.value_or(checkpoint_dtype(cfg, weights));
    const std::string q = precision_name(base, engine_opt.quant);
    // The engine's options on another backend / level: default configs, no planted fault.
    auto quantized_side = [&](const std::string& backend, const std::string& level) {
      EngineOptions o = engine_opt;
      o.kernels = nullptr;
      o.fault = {};
      o.backend = backend;
      o.backend_level = level;
      return o;
    };
    const std::string numerics = quantized_numerics(engine_opt, base);
    // The unquantized lm_head of a bf16 base on the fp32-FMA GEMM: one prefill per step.
    const bool lm_head_kept = engine_opt.quant_lm_head == QuantType::None;
    for (const std::string& level : backend_levels("cpu")) {
      const bool itself = engine_default && engine.backend == "cpu" && engine.isa == level;
      const bool literal = lm_head_kept && verify_detail::lm_head_takes_fma(level, base, weights, threads);
      both_paths([&] { return std::make_unique<EngineRunner>(cfg, weights, quantized_side("cpu", level), "engine"); },
                 "cpu " + q + " engine (" + level + ")", "cpu " + level + " " + numerics, !itself, literal);
    }
    both_paths([&] { return std::make_unique<EngineRunner>(cfg, weights, quantized_side("reference", ""), "engine"); },
               "reference " + q, "reference " + numerics, true, false);
  }
  // An engine on registry entries: its own prefill path, one prefill per step (an entry may
  // give the last row's lm_head another config than the all-rows GEMM), on the runner the
  // gates used (a second engine would re-read its packed weights from the kernel cache,
  // which the evaluator's audit counts as a cache hit of its re-run). Its configs are its
  // own: never from the memo.
  if (engine.backend == "cpu" && !engine_default)
    for (const Prepared& p : prompts)
      if (p.golden) out.push_back(self_match_prefill(engine_runner, p, "engine (prefill path)", top_k, true, copied));
  if (runs.hits > 0)
    log("self-match: " + std::to_string(runs.hits) + " of " + std::to_string(runs.runs) +
        " computations reused from this process's earlier verify of the same weights and golden");
  return out;
}

// The engine runner as the report describes it: what it actually got, not the label.
void describe_engine(EngineRunner& engine, const VerifyOptions& opt, VerifyResult& res) {
  const RunnerInfo ei = engine.info();
  res.runner_kind = ei.kind;
  res.backend = ei.backend;
  res.isa = ei.isa;
  res.dtype = ei.dtype;
  res.lm_head = ei.lm_head;
  if (const auto& ks = opt.engine.kernels) {
    res.heuristic_default_configs = !ks->registry || !ks->heuristic_used.empty();
    res.kernel_selection = {{"registry", ks->registry && ks->registry->writable_dir()
                                             ? nlohmann::json(ks->registry->writable_dir()->string())
                                             : nlohmann::json(nullptr)},
                            {"chosen", ks->chosen},
                            {"heuristic_used", ks->heuristic_used},
                            {"foreign_skipped", ks->foreign_skipped},
                            {"foreign_line", ks->foreign_line()}};
  }
  const QuantType quant = engine.engine().quant();
  if (quant == QuantType::None) {
    if (opt.min_top1) throw UsageError("verify: --min-top1 applies to quantized dtypes (q8_0, q4_0) only");
    res.default_kl_bound = kl_bound_for(engine.engine().dtype(), res.reference_dtype);
    res.kl_bound = opt.kl_bound.value_or(res.default_kl_bound);
  } else {
    const KldGate d = kld_gate_defaults(quant);
    res.gate = "kld";
    res.default_kl_bound = d.max_mean_kl;
    res.default_min_top1 = d.min_top1;
    res.kl_bound = opt.kl_bound.value_or(d.max_mean_kl);
    res.min_top1 = opt.min_top1.value_or(d.min_top1);
    // (0, 1], as deploy --min-top1: 0 would switch the top-1 check off.
    if (!(res.min_top1 > 0 && res.min_top1 <= 1))
      throw UsageError("verify: --min-top1 must be a share in (0, 1], got " + fmt::format("{}", res.min_top1));
  }
  if (!(res.kl_bound > 0) || !std::isfinite(res.kl_bound))
    throw UsageError("verify: --kl-bound must be a finite number > 0, got " + fmt::format("{}", res.kl_bound));
}

// Sums over the prompts of a run.
struct Totals {
  std::vector<SelfMatch> engine_matches;  // one per golden sequence
  CopiedSteps copied;                     // steps that are whole copies of a computation
  double kl_sum = 0.0;
  double kl_within_sum = 0.0;  // TeacherForcedStep::kl_within_print
  int64_t n_tf = 0, n_agree = 0;
  double full_kl_sum = 0.0;  // the steps compared over the whole vocabulary (as printed)
  double full_within_sum = 0.0;  // the same within the printed digits
  int64_t n_full = 0;
  double kernel_kl_sum = 0.0;  // the kernel check of a quantized engine
  int64_t n_kernel = 0;
  double plain_kl_sum = 0.0;  // the reference check (within the printed digits)
  double plain_kl_printed_sum = 0.0;  // the same at the reference's values as printed
  int64_t n_plain = 0;
  double plain_full_sum = 0.0;  // its steps compared over the whole vocabulary (within the digits)
  double plain_full_printed_sum = 0.0;
  int64_t n_plain_full = 0;
  bool first_kind = true;
  std::string worst_kl_where;
};

// One teacher-forced step of the kernel check (VerifyResult::kernel_mean_kl).
void kernel_check_step(const std::string& prompt, int k, const std::vector<float>& oracle_logits,
                       const std::vector<float>& engine_logits, VerifyResult& res, Totals& t) {
  const double kl = kl_full(oracle_logits, engine_logits);
  t.kernel_kl_sum += kl;
  t.n_kernel += 1;
  if (!(kl < res.kernel_max_kl)) {  // NaN is the worst
    res.kernel_max_kl = kl;
    res.kernel_worst_where = "prompt " + prompt + " step " + std::to_string(k) + ": fp32-activation engine top-5 " +
                             format_top(top_k(engine_logits)) + ", oracle top-5 " +
                             format_top(top_k(oracle_logits));
  }
}

// The runners teacher-forced beside the engine: the kernel check's two (a quantized engine
// only) and the reference check's fp32 computation (an engine that does not compute in
// fp32, against an outside reference); null where not run.
struct SideChecks {
  EngineRunner* oracle = nullptr;
  EngineRunner* twin = nullptr;
  EngineRunner* fp32 = nullptr;  // the reference check (VerifyResult::reference_check_mean_kl)
  bool kernel() const { return oracle && twin; }
  void prefill(std::span<const int> ids) {
    for (EngineRunner* r : {oracle, twin, fp32})
      if (r) r->prefill(ids);
  }
  void decode_step(int token, int pos) {
    for (EngineRunner* r : {oracle, twin, fp32})
      if (r) r->decode_step(token, pos);
  }
};

// Where a step's KL comes from, in log-probabilities: the largest |log p - log q| among the
// reference's top entries and the two rest masses. Top-5 logits printed to 4 digits read
// the same at a KL of 1e-4; these do not. "" without the reference's logsumexp or where
// no entry differs; at a step compared over the whole vocabulary, also the id of the KL's
// largest term. A step compare_step found NaN/inf engine logits at (its KL is inf) is
// said as such: the figures would be placeholders (id -1, nan).
std::string kl_detail(const StepRecord& ref, const TeacherForcedStep& st, std::span<const float> engine_logits, int k) {
  if (std::isinf(st.kl)) return "; the engine's logits hold NaN/inf here";
  std::string s;
  if (const std::optional<KlBreakdown> b = kl_breakdown(ref, engine_logits, k); b && b->worst_id >= 0)
    s = "; log-probabilities differ by up to " + fmt_g(b->max_log_prob_diff, 3) + " (id " +
        std::to_string(b->worst_id) + "), the mass outside the reference's top-" + std::to_string(k) + " is " +
        fmt_g(b->reference_rest, 3) + " there, " + fmt_g(b->engine_rest, 3) + " in the engine";
  if (st.full_vocabulary && ref.logits.size() == engine_logits.size()) {
    // The KL's largest term over the whole vocabulary: where the top-k says nothing.
    const double lse_p = log_sum_exp(ref.logits), lse_q = log_sum_exp(engine_logits);
    std::size_t worst = 0;
    double worst_term = -1.0;
    for (std::size_t i = 0; i < ref.logits.size(); ++i) {
      const double lp = ref.logits[i] - lse_p, lq = engine_logits[i] - lse_q;
      if (const double term = std::exp(lp) * std::abs(lp - lq); term > worst_term) worst_term = term, worst = i;
    }
    s += "; full logits: the largest term is id " + std::to_string(worst) + ", probability " +
         fmt_g(std::exp(ref.logits[worst] - lse_p), 3) + " in the reference, " +
         fmt_g(std::exp(engine_logits[worst] - lse_q), 3) + " in the engine";
  }
  return s;
}

// Both checks of one prompt: free-running token sets, then teacher-forced along the
// reference's tokens (top-5 both ways and KL per step).
PromptVerdict run_prompt(const Prepared& p, EngineRunner& engine, EngineRunner* oracle, SideChecks kc,
                         const Tokenizer* tok, int n_steps, VerifyResult& res, Totals& t) {
  PromptVerdict pv;
  pv.name = p.name;
  pv.prompt = p.text;
  pv.prompt_ids = p.ids;
  std::vector<StepRecord> ref_steps;
  if (p.golden) {
    ref_steps = p.golden->steps;
    // The reference's text must encode to its ids with llmport's tokenizer, rendered the way
    // the file says (a text with rendering "ids" is checked as raw text).
    if (tok && p.golden->prompt) {
      const bool chat = p.golden->prompt_rendering == "chat_template";
      std::vector<int> ours;
      if (chat && tok->chat_template().empty()) {
        pv.tokenization = "the reference says it rendered a chat template; the model has none";
      } else {
        try {
          ours = encode_prompt(*tok, *p.golden->prompt, chat);
        } catch (const ConfigError& e) {
          // A raw text the tokenizer cannot encode (a pre-tokenizer past its time budget) is
          // the tokenizer's error, not a check skipped: only a template is let through.
          if (!chat) throw;
          ours = p.ids;  // a template llmport cannot render: not checked, said below
          pv.tokenization = std::string("not checked: chat template not rendered (") + e.what() + ")";
        }
      }
      pv.tokenization_ok = ours == p.ids;  // empty `ours` (no template) never equals a prompt
      if (pv.tokenization.empty())
        pv.tokenization = pv.tokenization_ok ? "matches the reference"
                                           : "llmport encodes the prompt to " + format_ids(ours) +
                                                 ", the reference used " + format_ids(p.ids);
    }
    if (tok) {
      int n = 0;
      const std::string why = verify_detail::reference_text_mismatch(*p.golden, *tok, &n);
      pv.reference_text_ok = why.empty();
      if (!why.empty()) pv.reference_text = why;
      else if (n > 0) pv.reference_text = "matches the reference (" + std::to_string(n) + " checks)";
    }
    if (!tok && p.golden->prompt) {
      // The report shows the text beside ids nothing tied to it.
      pv.tokenization = "not checked: the model has no tokenizer.json (the ids are what was compared; the text is "
                        "the reference's label)";
    }
  } else {
    ref_steps = generate_greedy(*oracle, p.ids, n_steps);
  }
  const KlKind kind = kl_kind_for(ref_steps);
  if (t.first_kind) res.kl_kind = kind;
  else if (kind != res.kl_kind) res.kl_kind = KlKind::Coarsened;  // mixed: report the weaker
  t.first_kind = false;
  for (const auto& s : ref_steps) pv.reference_tokens.push_back(s.token);

  const auto eng_steps = generate_greedy(engine, p.ids, n_steps);
  res.engine_forward_calls += static_cast<int64_t>(eng_steps.size());
  res.engine_tokens_generated += static_cast<int64_t>(eng_steps.size());
  for (const auto& s : eng_steps) pv.engine_tokens.push_back(s.token);
  pv.free_running = check_free_running(eng_steps, ref_steps, n_steps, res.top_k);

  engine.prefill(p.ids);
  res.engine_forward_calls += 1;
  kc.prefill(p.ids);
  int pos = static_cast<int>(p.ids.size());
  SelfMatch engine_match{"engine", p.name, 0, 0};
  engine_match.fp32 = computes_fp32(engine.engine());
  double p_kl = 0.0;
  int p_agree = 0;
  for (int k = 0; k < static_cast<int>(ref_steps.size()); ++k) {
    const StepRecord& ref = ref_steps[static_cast<std::size_t>(k)];
    if (k > 0) {
      const int token = ref_steps[static_cast<std::size_t>(k - 1)].token;
      kc.decode_step(token, pos);
      engine.decode_step(token, pos++);
      res.engine_forward_calls += 1;
    }
    if (kc.kernel()) kernel_check_step(p.name, k, kc.oracle->last_logits(), kc.twin->last_logits(), res, t);
    if (kc.fp32) {
      const TeacherForcedStep plain = compare_step(k, ref, kc.fp32->last_logits(), kind, res.top_k);
      t.plain_kl_sum += plain.kl_within_print;
      t.plain_kl_printed_sum += plain.kl;
      t.n_plain += 1;
      if (plain.full_vocabulary)
        t.plain_full_sum += plain.kl_within_print, t.plain_full_printed_sum += plain.kl, t.n_plain_full += 1;
    }
    auto st = compare_step(k, ref, engine.last_logits(), kind, res.top_k);
    if (p.golden) mark_copied(t.copied, p, static_cast<std::size_t>(k),
                              count_self_match(ref, engine.last_logits(), engine_match, res.top_k));
    p_kl += st.kl;
    t.kl_within_sum += st.kl_within_print;
    if (st.full_vocabulary) t.full_kl_sum += st.kl, t.full_within_sum += st.kl_within_print, t.n_full += 1;
    res.reference_print_resolution = std::max(res.reference_print_resolution, ref.print_resolution());
    pv.max_kl = std::max(pv.max_kl, st.kl);
    if (st.kl >= res.max_kl) {
      res.max_kl = st.kl;
      t.worst_kl_where = "prompt " + p.name + " step " + std::to_string(k) + ": engine top-5 " +
                         format_top(st.engine_top) + ", reference top-5 " + format_top(st.reference_top) +
                         kl_detail(ref, st, engine.last_logits(), res.top_k);
    }
    p_agree += st.top1_agree ? 1 : 0;
    if (!st.pass()) pv.teacher_forced_top5_ok = false;
    pv.teacher_forced.push_back(std::move(st));
  }
  if (p.golden) t.engine_matches.push_back(engine_match);
  const int nt = static_cast<int>(pv.teacher_forced.size());
  res.teacher_forced_steps += nt;
  pv.mean_kl = nt ? p_kl / nt : 0.0;
  pv.top1_agreement = nt ? static_cast<double>(p_agree) / nt : 0.0;
  t.kl_sum += p_kl;
  t.n_tf += nt;
  t.n_agree += p_agree;

  // Failures of this prompt, first one first. Under the KLD gate the token-set findings are
  // reported (as warnings) but do not decide.
  if (!pv.tokenization_ok) res.failures.push_back("prompt " + p.name + ": tokenization differs: " + pv.tokenization);
  if (!pv.reference_text_ok && res.reference_text_differs.empty())
    res.reference_text_differs = "prompt " + p.name + ": " + pv.reference_text;
  auto& token_sets = res.gate == "kld" ? res.warnings : res.failures;
  const std::string note = res.gate == "kld" ? " [reported, not gating: KLD gate]" : "";
  if (!pv.free_running.pass)
    token_sets.push_back("prompt " + p.name + " (free-running): " + pv.free_running.message + note);
  for (const auto& st : pv.teacher_forced)
    if (!st.pass()) {
      token_sets.push_back(tf_failure(pv, st) + note);
      break;
    }
  return pv;
}

// gating: the token checks decide the verdict (not under the KLD gate, which reports them
// only: a FAIL there beside a PASS verdict would read as a contradiction).
std::string prompt_line(const PromptVerdict& pv, bool gating) {
  const std::string fail = gating ? "FAIL" : "FAIL (reported, not gating)";
  return "  " + pv.name + ": free-running " + (pv.free_running.pass ? "PASS" : fail) +
         (pv.free_running.first_divergence >= 0
              ? " (diverged at step " + std::to_string(pv.free_running.first_divergence) + ")"
              : "") +
         ", teacher-forced top-5 " + (pv.teacher_forced_top5_ok ? "ok" : fail) + ", top-1 " +
         fmt_g(100.0 * pv.top1_agreement, 4) + "%, mean KL " + fmt_g(pv.mean_kl);
}

// The golden's hidden states (VerifyResult::golden_layer_sequences): its damage is bad
// input, said before the long run; the engine departing from them fails the run.
void check_golden_layers(const std::shared_ptr<const RecordFile>& golden, EngineRunner& engine,
                         const ModelConfig& cfg, const WeightStore& weights, const VerifyOptions& opt,
                         VerifyResult& res) {
  const bool quantized = engine.engine().quant() != QuantType::None;
  const verify_detail::GoldenLayers g =
      verify_detail::compare_target_golden_layers(golden, engine, quantized, cfg, weights, opt.engine.threads);
  if (!g.golden_damaged.empty()) throw ConfigError("golden " + g.golden_damaged);
  res.golden_layer_sequences = g.n_sequences;
  res.golden_layers_departs = g.departs;
  res.golden_layers_gating = g.gating;
  res.golden_layers_unrecorded = g.unrecorded;
  if (!res.golden_layers_pass()) res.failures.push_back("every layer vs the golden: " + g.departs);
}

// The KLD gate's default bounds from the format's predicted cost on this model
// (VerifyResult::predicted_mean_kl): the dtype's bounds, widened by derived_kld_gate where
// the model is more sensitive to the rounding than stories260K, on whose figures they were
// set. The user's --kl-bound / --min-top1 still decide.
void derive_kld_bounds(const ModelConfig& cfg, const WeightStore& weights, const Engine& engine,
                       const VerifyOptions& opt, VerifyResult& res) {
  std::vector<TeacherSequence> seqs;
  for (const PromptVerdict& pv : res.prompts) {
    std::vector<bool> full;
    for (const TeacherForcedStep& st : pv.teacher_forced) full.push_back(st.full_vocabulary);
    seqs.push_back({pv.prompt_ids, pv.reference_tokens, std::move(full)});
  }
  const QuantCost cost = predict_quant_cost(cfg, weights, engine, opt.engine.threads, seqs, res.kl_kind);
  res.predicted_mean_kl = cost.mean_kl;
  res.predicted_top1 = cost.top1_agreement;
  res.predicted_noise_kl = cost.noise_mean_kl;
  res.predicted_quantizer_kl = cost.quantizer_mean_kl;
  const KldGate d = kld_gate_defaults(engine.quant());
  const KldGate derived = derived_kld_gate(d, cost.mean_kl, cost.top1_agreement);
  res.format_kl_bound = d.max_mean_kl;
  res.format_min_top1 = d.min_top1;
  res.default_kl_bound = derived.max_mean_kl;
  res.default_min_top1 = derived.min_top1;
  res.kl_bound = opt.kl_bound.value_or(derived.max_mean_kl);
  res.min_top1 = opt.min_top1.value_or(derived.min_top1);
}

// The mean KL within the reference's printed digits, where they matter (" (6.1e-06 at the
// most favourable ...)"), else "".
std::string within_print_note(const VerifyResult& res) {
  if (!(res.mean_kl_within_print < 0.99 * res.mean_kl)) return "";
  return " (" + at_favourable_values(res.mean_kl_within_print, res.reference_print_resolution) + ")";
}

// The gates over the whole run: every prompt's checks and the mean KL bound.
void summarize(const Totals& t, VerifyResult& res) {
  res.mean_kl = t.n_tf ? t.kl_sum / static_cast<double>(t.n_tf) : 0.0;
  res.top1_agreement = t.n_tf ? static_cast<double>(t.n_agree) / static_cast<double>(t.n_tf) : 0.0;
  res.free_running_pass = !res.prompts.empty();
  res.teacher_forced_pass = !res.prompts.empty();
  for (const auto& pv : res.prompts) {
    res.free_running_pass = res.free_running_pass && pv.free_running.pass && pv.tokenization_ok;
    res.teacher_forced_pass = res.teacher_forced_pass && pv.teacher_forced_top5_ok;
  }
  res.mean_kl_within_print = t.n_tf ? t.kl_within_sum / static_cast<double>(t.n_tf) : 0.0;
  res.full_kl_steps = t.n_full;
  res.mean_full_kl = t.n_full ? t.full_kl_sum / static_cast<double>(t.n_full) : 0.0;
  res.mean_full_kl_within_print = t.n_full ? t.full_within_sum / static_cast<double>(t.n_full) : 0.0;
  const bool kl_ok = res.mean_kl_pass();
  if (!(res.mean_kl_within_print <= res.kl_bound)) {
    res.teacher_forced_pass = false;
    res.failures.push_back("mean KL per step " + fmt_g(res.mean_kl) + " exceeds the bound " + fmt_g(res.kl_bound) +
                           within_print_note(res) + " (max " + fmt_g(res.max_kl) + " at " + t.worst_kl_where + ")");
  } else if (!kl_ok) {
    res.teacher_forced_pass = false;
    res.failures.push_back("mean KL over the " + std::to_string(res.full_kl_steps) +
                           " steps the reference gives full logits for, " + fmt_g(res.mean_full_kl_within_print) +
                           ", exceeds the bound " + fmt_g(res.kl_bound) +
                           " (the whole vocabulary: mass moved among the ids outside the reference's top-" +
                           std::to_string(res.top_k) + " shows there; mean KL over all steps " +
                           fmt_g(res.mean_kl) + ")");
  }
  if (res.prompts.empty()) res.failures.push_back("no prompts were run");
  if (res.reference_checked) {
    res.reference_check_mean_kl = t.n_plain ? t.plain_kl_sum / static_cast<double>(t.n_plain) : 0.0;
    res.reference_check_mean_kl_printed = t.n_plain ? t.plain_kl_printed_sum / static_cast<double>(t.n_plain) : 0.0;
    res.reference_check_mean_full_kl = t.n_plain_full ? t.plain_full_sum / static_cast<double>(t.n_plain_full) : 0.0;
    res.reference_check_mean_full_kl_printed =
        t.n_plain_full ? t.plain_full_printed_sum / static_cast<double>(t.n_plain_full) : 0.0;
    // Its full-vocabulary steps on their own too (as the engine's gate): never averaged away.
    const bool full_ok = t.n_plain_full == 0 || res.reference_check_mean_full_kl <= res.reference_check_bound;
    res.reference_check_pass =
        t.n_plain > 0 && res.reference_check_mean_kl <= res.reference_check_bound && full_ok;  // NaN fails
    if (!res.reference_check_pass) {
      const bool on_full = t.n_plain > 0 && res.reference_check_mean_kl <= res.reference_check_bound;
      res.failures.push_back("the reference disagrees with llmport's fp32 computation (not independent): mean KL " +
                             fmt_g(on_full ? res.reference_check_mean_full_kl : res.reference_check_mean_kl) +
                             (on_full ? " over the " + std::to_string(t.n_plain_full) +
                                            " steps it gives full logits for"
                                      : std::string(" a step")) +
                             " exceeds the " +
                             res.reference_check_dtype + " bound " + fmt_g(res.reference_check_bound) +
                             ", where the " + res.dtype + " engine's own gate allows " + fmt_g(res.kl_bound) +
                             ": a damaged reference, or a fault of the forward the engine shares");
    }
  }
  if (res.gate == "kld") {
    // Only the KLD gate decides: mean KL and top-1 share (and the prompts' tokenization,
    // which is about the inputs, not the precision).
    res.top1_pass = res.top1_agreement >= res.min_top1;
    if (!res.top1_pass)
      res.failures.push_back("top-1 agreement " + fmt_g(100.0 * res.top1_agreement, 4) + "% of " +
                             std::to_string(t.n_tf) + " teacher-forced steps is below the bound " +
                             fmt_g(100.0 * res.min_top1, 4) + "%");
    res.kernel_mean_kl = t.n_kernel ? t.kernel_kl_sum / static_cast<double>(t.n_kernel) : 0.0;
    res.kernel_pass = t.n_kernel > 0 && res.kernel_mean_kl <= res.kernel_kl_bound;  // NaN fails
    if (!res.kernel_pass)
      res.failures.push_back("quantized kernels: the KL from llmport's fp32 oracle holding the same " + res.dtype +
                             " weights to the engine with fp32 activations, " + fmt_g(res.kernel_mean_kl) +
                             " a step on average, exceeds the " + res.kernel_base_dtype + " bound " +
                             fmt_g(res.kernel_kl_bound) + " (max " + fmt_g(res.kernel_max_kl) + " at " +
                             res.kernel_worst_where + ")");
    res.pass = kl_ok && res.top1_pass && res.kernel_pass && res.reference_check_pass && res.failures.empty();
    return;
  }
  res.pass = res.free_running_pass && res.teacher_forced_pass && res.failures.empty();
}

}  // namespace

void check_prompts_beside_reference(const std::string& reference, const fs::path& prompts_file) {
  if (reference.rfind("golden:", 0) == 0 && !prompts_file.empty())
    throw UsageError("--prompts " + prompts_file.string() +
                     ": a golden reference runs the prompts it holds (give --prompts with numpy, hf or oracle)");
}

VerifyResult run_verify(const fs::path& model_dir, const VerifyOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  auto log = [&](const std::string& s) {
    if (opt.log) opt.log(s);
  };
  VerifyResult res;
  res.started_at = now_iso();
  res.model = model_dir.string();
  res.model_name = fs::absolute(model_dir).lexically_normal().filename().string();
  if (res.model_name.empty()) res.model_name = fs::absolute(model_dir).lexically_normal().parent_path().filename().string();
  res.kernel_configs = opt.kernel_configs;
  res.heuristic_default_configs = opt.kernel_configs == "heuristic-default";
  res.full = true;  // --quick with a built-in set clears it
  for (const char* name : {"report.json", "report.md"})
    if (!opt.report_dir.empty() && fs::exists(opt.report_dir / name))
      throw UsageError((opt.report_dir / name).string() + " exists; not overwriting (choose another --report-dir)");
  // A file where the report directory (or one above it) would be fails the report write
  // only after the whole run: said now.
  for (fs::path p = opt.report_dir; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      if (p == p.parent_path()) break;
      continue;
    }
    if (!fs::is_directory(p, ec))
      throw UsageError("--report-dir " + opt.report_dir.string() + ": " + p.string() + " is not a directory");
    break;
  }
  // Created now, so a directory that cannot be (read-only, /proc) is said before the run,
  // not after it.
  if (!opt.report_dir.empty()) {
    std::error_code ec;
    fs::create_directories(opt.report_dir, ec);
    if (ec)
      throw UsageError("--report-dir " + opt.report_dir.string() + ": cannot be created (" + ec.message() + ")");
  }

  // ---- inputs: model, reference, prompts
  const ModelConfig cfg =
      load_model_config(model_dir, opt.max_seq > 0 ? std::optional<int>(opt.max_seq) : std::nullopt);
  const fs::path dir = cfg.dir.empty() ? model_dir : cfg.dir;
  const WeightStore weights = WeightStore::open(dir, cfg);
  std::vector<std::string> not_run = unrun_model_settings(dir);
  not_run.insert(not_run.end(), weights.warnings().begin(), weights.warnings().end());
  for (const std::string& w : not_run)
    res.model_files_not_run += (res.model_files_not_run.empty() ? "" : "; ") + w;
  std::unique_ptr<Tokenizer> tok;
  if (Tokenizer::exists(dir)) tok = Tokenizer::load(dir);
  res.ordinary_stop_ids = ordinary_stop_ids(cfg, tok.get(), dir);
  if (tok)
    for (const std::string& d : tok->config_disagreements())
      res.tokenizer_files_disagree += (res.tokenizer_files_disagree.empty() ? "" : "; ") + d;
  const Plan plan = plan_reference(model_dir, opt, cfg, weights, tok.get(), dir, res);
  if (plan.golden) {
    const ReferenceProvenance prov = assess_provenance(*plan.golden);
    res.reference_producer = prov.producer;
    res.independence_finding = prov.finding;
    res.reference_sequences = static_cast<int>(plan.golden->sequences.size());
    res.reference_steps = plan.golden->n_steps;
    res.reference_top_entries = std::numeric_limits<int>::max();
    for (const auto& seq : plan.golden->sequences)
      for (const auto& st : seq.steps) res.reference_top_entries = std::min<int>(res.reference_top_entries, static_cast<int>(st.top.size()));
  }
  res.fault = opt.engine.fault.spec;
  res.top_k = opt.top_k;
  if (res.top_k < 1) throw UsageError("verify: top-k must be >= 1");
  res.n_prompts = static_cast<int>(plan.prompts.size());
  res.n_steps = plan.n_steps;
  if (plan.n_steps <= 0) throw UsageError("verify: number of steps must be > 0");
  for (const auto& p : plan.prompts)
    check_ids(p.ids, cfg, plan.n_steps, (plan.golden ? plan.golden->path.string() + ": " : "") + "prompt " + p.name,
              plan.golden.get());
  if (plan.golden) check_record_fits_model(*plan.golden, cfg);

  // ---- runners
  EngineRunner engine(cfg, weights, opt.engine, "engine");
  describe_engine(engine, opt, res);
  std::unique_ptr<EngineRunner> oracle;
  // The oracle reference of a quantized engine stays unquantized: the gate measures what
  // the quantization costs against the model as it was trained.
  if (res.reference_kind == "oracle") oracle = make_oracle_runner(cfg, weights, opt.engine.threads);
  // The kernel check (VerifyResult::kernel_mean_kl): the oracle with the same quantized
  // weights against the engine's fp32-activation twin.
  std::unique_ptr<EngineRunner> quant_oracle, kernel_twin, fp32_check;
  if (res.gate == "kld") {
    quant_oracle = make_oracle_runner(cfg, weights, opt.engine.threads, opt.engine.quant, opt.engine.quant_lm_head);
    EngineOptions twin = opt.engine;
    twin.quant_act = ActQuant::F32;
    // Its unquantized tensors in fp32 too: the oracle's, so the two differ by summation
    // order only and the fp32 bound applies. With a bf16 base the bf16 bound (2.5e-3)
    // let a planted x1.1 logit scale through (2.2e-3); the bf16 kernels of those tensors
    // are held by phase 1 and the engine's own gate.
    twin.dtype = DType::F32;
    twin.kernels = nullptr;  // tiles of a quantized linear are its act only; no kernel-cache writes
    kernel_twin = std::make_unique<EngineRunner>(cfg, weights, twin, "engine (fp32 activations)", true);
    res.kernel_base_dtype = dtype_name(kernel_twin->engine().dtype());
    res.kernel_kl_bound = kernel_kl_bound_for(kernel_twin->engine().dtype());
  }
  // The reference check (VerifyResult::reference_check_mean_kl): an engine that does not
  // compute in fp32 is held to a wider bound than the reference's own precision supports;
  // llmport's fp32 computation of the same forward is held to that precision.
  if (res.reference_kind != "oracle" && !computes_fp32(engine.engine())) {
    EngineOptions f = opt.engine;
    f.dtype = DType::F32;
    f.quant = f.quant_lm_head = QuantType::None;
    f.quant_act.reset();
    f.quant_act_of_tensor.clear();
    f.kernels = nullptr;  // the defaults: no kernel-cache writes for a check
    fp32_check = std::make_unique<EngineRunner>(cfg, weights, f, "fp32 computation (reference check)", true);
    res.reference_checked = true;
    res.reference_check_dtype = dtype_name(DType::F32);
    res.reference_check_bound = kl_bound_for(DType::F32, res.reference_dtype);
  }
  log("verify " + res.model_name + ": engine " + res.backend + "/" + res.dtype + " (" + res.isa + "), reference " +
      res.reference_kind +
      (res.independence_finding.empty() ? "" : " (not independent: " + res.independence_finding + ")") +
      ", prompt set " + res.prompt_set + " [" + res.prompt_rendering + "], " + std::to_string(plan.prompts.size()) +
      " prompts x " + std::to_string(plan.n_steps) + " steps");

  if (plan.golden && opt.golden_layers) check_golden_layers(plan.golden, engine, cfg, weights, opt, res);

  // ---- the checks, prompt by prompt
  engine.engine().backend().reset_counters();
  Totals totals;
  for (const Prepared& p : plan.prompts) {
    res.prompts.push_back(run_prompt(p, engine, oracle.get(), {quant_oracle.get(), kernel_twin.get(), fp32_check.get()},
                                     tok.get(), plan.n_steps, res, totals));
    log(prompt_line(res.prompts.back(), res.gate != "kld"));
  }
  res.dispatch_counters = engine.engine().backend().counters().calls;
  fp32_check.reset();
  if (res.gate == "kld") {
    quant_oracle.reset();  // the prediction builds its own fp32-sized copies, one at a time
    kernel_twin.reset();
    oracle.reset();
    derive_kld_bounds(cfg, weights, engine.engine(), opt, res);
  }

  // ---- verdict: the gates, then what the run may claim
  summarize(totals, res);
  if (plan.golden) {
    res.self_matches = totals.engine_matches;
    // The other computations' runs (most of a golden verify's time) can only deny an
    // independence that the provenance has not already denied.
    if (res.independence_finding.empty())
      for (auto& m :
           self_matches_of_llmport_kernels(cfg, weights, opt.engine, engine, plan.prompts, res.top_k, totals.copied,
                                           verify_detail::model_content_key(find_config_json(model_dir), cfg, weights) +
                                               " " + golden_content_key(plan.prompts, res.top_k),
                                           log))
        res.self_matches.push_back(m);
    for (const Prepared& p : plan.prompts) {
      if (!p.golden) continue;
      const auto it = totals.copied.find(&p);
      const auto n = static_cast<int64_t>(p.golden->steps.size());
      const int64_t c = it == totals.copied.end() ? 0 : std::count(it->second.begin(), it->second.end(), 1);
      res.self_match_steps.push_back({"llmport's computations, a step from any", p.name, n, c});
    }
    res.copy_directions = copy_directions(res.self_matches, kFp64Side);
    std::erase_if(res.self_matches, [](const SelfMatch& m) { return m.against == kFp64Side; });
  }
  decide_independence(res);
  if (plan.golden) decide_independence_shown(res);
  res.caps = verdict_caps(res, plan.builtin_set);
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Inside a deployment the phase holds the golden's hidden states after this verdict: the
  // line says it covers the logits, so a PASS here is not read as the phase's.
  const bool layers_elsewhere =
      plan.golden && !opt.golden_layers &&
      std::any_of(plan.golden->sequences.begin(), plan.golden->sequences.end(),
                  [](const RecordSequence& q) { return q.hidden.has_layers(); });
  log(std::string(layers_elsewhere ? "verify (logits; the phase checks the hidden states): " : "verify: ") +
      res.verdict() + " (" + (res.gate == "kld" ? res.dtype + " KLD gate: " : "") +
      "mean KL " + fmt_g(res.mean_kl) + ", bound " + fmt_g(res.kl_bound) + ", top-1 agreement " +
      fmt_g(100.0 * res.top1_agreement, 4) + "%" +
      (res.gate == "kld" ? ", bound " + fmt_g(100.0 * res.min_top1, 4) + "%; predicted cost of " + res.dtype +
                               " rounding here: mean KL " + fmt_g(res.predicted_mean_kl) + ", top-1 kept " +
                               fmt_g(100.0 * res.predicted_top1, 4) + "%; kernels (fp32 activations) vs the " +
                               res.dtype + " oracle: mean KL " + fmt_g(res.kernel_mean_kl) + ", bound " + fmt_g(res.kernel_kl_bound)
                         : "") +
      ")");
  if (!opt.report_dir.empty()) {
    res.report_dir = opt.report_dir;
    write_verify_report(opt.report_dir, res);
  }
  return res;
}

}  // namespace llmport
