// Workspace documents generated from the manifest. Regenerated files say so in their first
// lines; progress.md / LESSONS.md / debug_log.md are append-only logs.
#include "deploy/docs_writer.hpp"
#include "deploy/generated_file.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <sstream>

#include "deploy/util.hpp"
#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/quant_plan.hpp"
#include "llmport/verify.hpp"
#include "llmport/weights.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

const std::vector<std::string>& phase_gates() {
  static const std::vector<std::string> g = {
      "weights load (every layer, every tensor, right shape), config consistent, the "
      "reference runs the first prompt with a sane top-1 and no NaN",
      "every (kernel, shape) the model needs on the target matches the fp32 reference "
      "kernels element-wise (one tolerance table); rows recorded in the deployment registry",
      "layer 0 on the target vs the reference: whole-tensor cosine >= 0.99, relative error "
      "<= 0.141 (0.0040 for an fp32 target against an fp32 reference), per-position min cosine by "
      "head_dim, no NaN",
      "`llmport verify` (free-running top-5 and teacher-forced KL gates) PASSES; against a golden, "
      "every layer agrees with its recorded hidden states; diagnosis saved",
      "prefill kernels swept on this machine; correctness still PASSES with them; adopted only when "
      "the 95% interval of the ratio of median prefill times (>= 5 interleaved runs of min(512, context) "
      "tokens, paired bootstrap) lies below 1 vs phase 3's configs, else phase 3's configs are kept",
      "decode kernels swept on this machine; correctness still PASSES with them; adopted only when "
      "the 95% interval of the ratio of median decode times per token (128 tokens) lies below 1 vs "
      "phase 4's configs, else phase 4's configs are kept",
      "manifest complete, `make verify` from the workspace PASSES, README filled with "
      "measured numbers",
      "a fresh process audits the gates, re-runs verify --full from a cleared kernel cache "
      "and writes docs/evaluation_report.md"};
  return g;
}

namespace {

std::string fmt_num(const nlohmann::json& v) {
  if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) {
    if (c == '\'') o += "'\\''";
    else o += c;
  }
  return o + "'";
}

// Text as make text (a variable's value, a recipe's word): '$' doubled; '#' as
// $(LLMPORT_HASH), since a bare '#' starts a comment and make halves the backslashes in
// front of a quoted '\\#' (a path "a\\#b" would change). make cannot hold a line break in
// a value: validation refuses such paths (pipeline.cpp), this is the last guard.
std::string make_text(const std::string& s) {
  if (s.find_first_of("\n\r") != std::string::npos)
    throw UsageError("cannot write " + printable(s) + " into the workspace Makefile: it holds a line break");
  std::string o;
  for (char c : s) {
    if (c == '$') o += "$$";
    else if (c == '#') o += "$(LLMPORT_HASH)";
    else o += c;
  }
  return o;
}


// Phase 0's prompt ids, for a no-tokenizer model's default PROMPT_IDS; before phase 0 has
// run, the first prompt of verify's built-in id set (what phase 0 will use).
std::string default_prompt_ids(const Manifest& m) {
  std::vector<int> ids = m.first_prompt_ids;
  const auto& rc = m.resolved_config;
  if (ids.empty() && rc.value("vocab_size", 0) > 0) {
    const int context = rc.value("max_seq", 0) > 0 ? rc.value("max_seq", 0) : rc.value("max_position_embeddings", 0);
    ids = *builtin_id_prompts(rc.value("vocab_size", 0), context).front().ids;
  }
  std::vector<std::string> v;
  for (int id : ids) v.push_back(std::to_string(id));
  return join(v, ",");
}

// Which prompts verify uses for this deployment (README).
std::string prompt_set_line(const Manifest& m) {
  if (m.reference.kind == "golden") return "the golden's sequences";
  if (!m.prompts_file.empty()) return "`" + m.prompts_file.string() + "`";
  if (!m.has_tokenizer)
    return fmt::format("built-in deterministic id prompts (no tokenizer; seed {}, ids < vocab_size)", kIdPromptSeed);
  return "verify's built-in set (instruct, rendered with the chat template, when the tokenizer has one; else base)";
}

}  // namespace

// Recipes use such values inside double quotes ("$(MODEL)": paths with spaces stay one
// argument, and a user's `make MODEL=...` keeps working). In double quotes the shell still
// expands '$', '`' and '\\' and ends at '"': each gets a backslash, so a path like
// /m/$(touch x)/`id` reaches llmport byte for byte and runs nothing.
std::string makefile_dquoted(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '$' || c == '`' || c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return make_text(o);
}

std::string engine_flags(const Manifest& m) {
  return fmt::format("--backend {} --dtype {}{} --threads $(THREADS)", m.target, m.dtype,
                     m.quantize_lm_head.empty() ? "" : " --quantize-lm-head " + m.quantize_lm_head);
}

void write_makefile(const Workspace& ws, const Manifest& m) {
  std::ostringstream o;
  o << "# Generated by llmport deploy " << m.llmport_version << " for deployment '" << printable(m.name)
    << "'.\n"
       "# Every target calls llmport with the deployment's backend, dtype, reference and tuned\n"
       "# kernel registry. Variables: PROMPT (text), PROMPT_IDS (comma-separated ids; models\n"
       "# without a tokenizer), N_TOKENS, MODEL, LLMPORT.\n";
  // Every user-controlled value below is written for its use in the recipes (make_dquoted
  // or a single-quoted shell word), never as bare text: a path or name must not run code.
  o << "LLMPORT_HASH := \\#\n";
  // What the deployment is (binary, model, threads, directory): plain `=`, so only the make
  // command line overrides them, never the environment (an exported MODEL or THREADS of the
  // user's shell ran another model, or skipped the tuned entries as another thread count's).
  o << "LLMPORT = " << makefile_dquoted(self_executable().string()) << "\n";
  o << "MODEL = " << makefile_dquoted(m.model_dir.string()) << "\n";
  std::string ids = default_prompt_ids(m);
  if (m.has_tokenizer) o << "PROMPT ?= Once upon a time\nPROMPT_IDS ?=\n";
  else o << "PROMPT ?=\nPROMPT_IDS ?= " << ids << "\n";
  o << "THREADS = " << m.threads << "\n";
  o << "N_TOKENS ?= 32\n"
       // The prompt reaches llmport byte for byte: $(value ...) takes the text unexpanded
       // (make PROMPT='$(x) $HOME' must not become " OME"), := keeps it unexpanded on export.
       "override PROMPT := $(value PROMPT)\n"
       "override PROMPT_IDS := $(value PROMPT_IDS)\n"
       "export PROMPT PROMPT_IDS\n"
       // Written out, not derived from MAKEFILE_LIST: make's path functions split at spaces.
       "# The deployment directory (make DEPLOY_DIR=... after moving it).\n"
       "DEPLOY_DIR = "
    << makefile_dquoted(fs::absolute(ws.dir()).lexically_normal().string()) << "\n";
  o << "FLAGS := " << engine_flags(m) << "\n";
  o << "REFERENCE := " << makefile_dquoted(m.reference.to_arg()) << "\n";
  // run and verify look up the deployment's registry first: its tuned tile configs (shapes
  // it has not measured yet fall back to the heuristic default, and reports say so).
  o << "REGISTRY := $(DEPLOY_DIR)/registry\n";
  o << "CONTEXT := " << (m.max_seq > 0 ? fmt::format("--max-seq {}", m.max_seq) : "") << "\n";
  // --deployment: run warns when MODEL's files moved since deployment (a stat, not a hash).
  o << "RUN_REGISTRY := --registry \"$(REGISTRY)\" --deployment \"$(DEPLOY_DIR)\" $(CONTEXT)\n";
  // --deployment: verify first checks MODEL's files against the hashes deployment.json records.
  o << "VERIFY_FLAGS := --reference \"$(REFERENCE)\" --registry \"$(REGISTRY)\" --deployment \"$(DEPLOY_DIR)\" $(CONTEXT)";
  // A quantized deployment's own KLD-gate bounds (deploy --kl-bound / --min-top1).
  if (m.verify_kl_bound > 0) o << " --kl-bound " << fmt::format("{}", m.verify_kl_bound);
  if (m.verify_min_top1 > 0) o << " --min-top1 " << fmt::format("{}", m.verify_min_top1);
  if (!m.prompts_file.empty()) o << " --prompts " << make_text(shell_quote(m.prompts_file.string()));
  o << "\n";
  // One directory per call, to the nanosecond: two `make verify` within a second (phase 6
  // of a --from-phase run right after the first deployment) must not share one, since
  // verify never overwrites a report.
  o << "REPORTS = $(DEPLOY_DIR)/verify/reports/$$(date -u +%Y%m%d-%H%M%S-%N)\n";
  o << "\n";
  {
    const int ctx = m.resolved_config.value("max_seq", 0) > 0 ? m.resolved_config.value("max_seq", 0) : 4096;
    o << fmt::format("BENCH_FLAGS ?= -p {} -n {} -r 3\n", std::min(512, ctx), std::min(128, ctx - 1));
  }
  o << ".PHONY: run verify verify-full diagnosis profile bench compile clean\n\n";
  // Whichever input the user gave wins over the other's default: with a tokenizer PROMPT has
  // one (ids only when PROMPT_IDS is given), without one PROMPT_IDS has (text only when
  // PROMPT is given, which `run` then refuses with the reason instead of running the ids).
  const std::string ids_test = m.has_tokenizer ? "[ -n \"$$PROMPT_IDS\" ]" : "[ -z \"$$PROMPT\" ]";
  auto with_input = [&ids_test](const std::string& cmd_prefix, const std::string& tail) {
    return fmt::format(
        "\t@if {}; then {} --prompt-ids \"$$PROMPT_IDS\"{}; \\\n"
        "\telse {} --prompt \"$$PROMPT\"{}; fi\n",
        ids_test, cmd_prefix, tail, cmd_prefix, tail);
  };
  o << "## run: greedy generation of N_TOKENS tokens from PROMPT / PROMPT_IDS\nrun:\n"
    << with_input("\"$(LLMPORT)\" run \"$(MODEL)\" $(FLAGS) $(RUN_REGISTRY) --temperature 0 --n-tokens $(N_TOKENS)", "")
    << "\n";
  o << "## verify: the correctness gate (both checks) against the deployment's reference\n"
       "verify:\n"
       "\t\"$(LLMPORT)\" verify \"$(MODEL)\" $(FLAGS) $(VERIFY_FLAGS) --report-dir \"$(REPORTS)\"\n\n";
  o << "## verify-full: the same gate (every prompt of the set runs by default; kept for scripts)\n"
       "verify-full:\n"
       "\t\"$(LLMPORT)\" verify \"$(MODEL)\" $(FLAGS) $(VERIFY_FLAGS) --report-dir \"$(REPORTS)\"\n\n";
  o << "## diagnosis: per-layer comparison with the fp32 reference on PROMPT / PROMPT_IDS\n"
       "diagnosis:\n"
       "\t@if " + ids_test + "; then \"$(LLMPORT)\" diagnosis \"$(MODEL)\" $(FLAGS) $(CONTEXT) --prompt \"$$PROMPT_IDS\" --prompt-ids --out \"$(REPORTS)\"; \\\n"
       "\telse \"$(LLMPORT)\" diagnosis \"$(MODEL)\" $(FLAGS) $(CONTEXT) --prompt \"$$PROMPT\" --out \"$(REPORTS)\"; fi\n\n";
  o << "## profile: per-op time table, prefill and decode throughput\nprofile:\n"
    << with_input("\"$(LLMPORT)\" run \"$(MODEL)\" $(FLAGS) $(RUN_REGISTRY) --temperature 0 --n-tokens $(N_TOKENS) --profile", "")
    << "\n";
  o << "## bench: llama-bench style prefill/decode tokens/s with the tuned configs, each repetition\n"
       "## beside its measured bound (BENCH_FLAGS: -p prompt sizes, -n generated tokens, -r repetitions)\n"
       "bench:\n"
       "\t\"$(LLMPORT)\" bench \"$(MODEL)\" $(FLAGS) $(BENCH_FLAGS) --registry \"$(REGISTRY)\" "
       "--kernel-cache \"$(DEPLOY_DIR)/kernel_cache\"\n\n";
  o << "## compile: validate every kernel x shape this model needs with the deployment's configs\n"
       "compile:\n"
       "\t\"$(LLMPORT)\" kernels validate \"$(MODEL)\" --dtype " << m.dtype
    << " --threads $(THREADS) --registry \"$(REGISTRY)\" --name " << make_text(shell_quote(m.name)) << "\n\n";
  // Only the files llmport writes there (the kernel cache's <hash>-<hash>.bin, the reports
  // of verify and diagnosis), then the directories left empty: a file of the user's in
  // either stays, as phase 7 keeps it (set_aside_unknown_files).
  o << "## clean: remove the kernel cache and verify reports llmport wrote (never the manifest, the\n"
       "## registry, or a file of yours placed in those directories)\n"
       "clean:\n"
       "\t@find \"$(DEPLOY_DIR)/kernel_cache\" -maxdepth 1 -type f -regextype posix-extended "
       "-regex '.*/[0-9a-f]+-[0-9a-f]+\\.bin' -delete 2>/dev/null || true\n"
       "\t@find \"$(DEPLOY_DIR)/verify/reports\" -mindepth 2 -maxdepth 2 -type f \\( -name report.md -o "
       "-name report.json -o -name 'diagnosis.*' \\) -delete 2>/dev/null || true\n"
       "\t@find \"$(DEPLOY_DIR)/kernel_cache\" \"$(DEPLOY_DIR)/verify/reports\" -depth -type d -empty -delete "
       "2>/dev/null || true\n";
  write_generated(ws, ws.makefile(), o.str());
}

void write_readme(const Workspace& ws, const Manifest& m) {
  std::ostringstream o;
  o << "# Deployment: " << m.name << "\n\n"
    << "<!-- generated by llmport deploy from deployment.json; regenerated after every phase -->\n\n";
  o << "| | |\n|---|---|\n";
  o << "| model | `" << m.model_dir.string() << "`" << (m.repo_id.empty() ? "" : " (" + m.repo_id + ")") << " |\n";
  if (!m.repo_id.empty())
    o << "| HF revision | " << (m.revision.empty() ? "main" : m.revision) << ", commit `" << m.commit << "` |\n";
  o << "| prompts | " << prompt_set_line(m) << " |\n";
  o << "| architecture | " << m.architecture << " |\n";
  o << "| content hash (sha256) | `" << m.content_hash << "` |\n";
  o << "| target | " << m.target << " |\n| dtype | " << m.dtype << " |\n";
  o << "| reference | " << m.reference.to_arg()
    << (m.reference.independent() ? "" : " (llmport's own fp32 oracle: *not independent*)") << " |\n";
  int fu = m.first_unpassed();
  o << "| state | " << (fu == kNumPhases ? "all phases passed" : fmt::format("phase {} not passed", fu))
    << (m.needs_human_review ? " — **needs-human-review**" : "") << " |\n\n";

  o << "## Run\n\n```sh\n";
  if (m.has_tokenizer) o << "make run PROMPT='Once upon a time' N_TOKENS=32\n";
  else o << "make run PROMPT_IDS=" << default_prompt_ids(m)
         << " N_TOKENS=24   # no tokenizer: token ids in, token ids out\n";
  o << "```\n\n## Verify\n\n```sh\nmake verify        # the gate: free-running top-5 + teacher-forced KL\n"
       "make verify-full   # the same gate (kept for scripts)\nmake diagnosis     # per-layer cosine vs the fp32 reference\n```\n\n"
       "## Profile and bench\n\n```sh\nmake profile       # per-op time table, prefill tokens/s, decode ms/token\n"
       "make bench         # llama-bench style pp/tg tokens/s, each repetition beside its measured bound\n"
       "make compile       # validate every kernel x shape with the deployment's configs\n"
       "make clean         # remove the kernel cache and reports llmport wrote (not the manifest, registry or your files)\n```\n\n";
  o << "## Measured\n\n";
  if (m.measured.empty()) {
    o << "Not measured yet (phases 4-6 fill this in).\n\n";
  } else {
    o << "| measure | value |\n|---|---|\n";
    for (const auto& [k, v] : m.measured.items()) o << "| " << md_cell(k) << " | " << md_cell(fmt_num(v)) << " |\n";
    o << "\n";
  }
  o << "## Phases\n\n| phase | name | status | reason |\n|---|---|---|---|\n";
  for (const auto& p : m.phases)
    o << "| " << p.phase << " | " << phase_name(p.phase) << " | " << status_name(p.status) << " | "
      << md_cell(p.reason) << " |\n";
  o << "\nSee TODO.md (checklist, blockers), ARCHITECTURE.md (config, kernels), "
       "docs/development_progress/ (logs, timing) and docs/evaluation_report.md.\n";
  write_generated(ws, ws.readme(), o.str());
}

void write_architecture(const Workspace& ws, const Manifest& m, const ModelConfig& cfg) {
  std::ostringstream o;
  o << "# Architecture: " << m.name << "\n\n<!-- generated by llmport deploy -->\n\n";
  o << "## Resolved config\n\n```json\n" << cfg.to_json().dump(2) << "\n```\n\n";
  o << "## Family deltas this model uses\n\n";
  std::vector<std::string> d;
  if (cfg.n_kv_heads != cfg.n_heads)
    d.push_back(fmt::format("GQA: {} query heads share {} KV heads (group {}); query head h reads KV head h / {}",
                            cfg.n_heads, cfg.n_kv_heads, cfg.gqa_group(), cfg.gqa_group()));
  else d.push_back(fmt::format("MHA: {} heads", cfg.n_heads));
  if (cfg.head_dim * cfg.n_heads != cfg.emb_dim)
    d.push_back(fmt::format("explicit head_dim {} (emb_dim / n_heads would be {})", cfg.head_dim,
                            cfg.emb_dim / std::max(1, cfg.n_heads)));
  if (cfg.qkv_bias) d.push_back("q/k/v projections carry a bias (added before RoPE)");
  if (cfg.o_bias) d.push_back("o_proj carries a bias");
  if (cfg.qk_norm) d.push_back("per-head RMSNorm on q and k before RoPE (Qwen3)");
  if (cfg.rope_scaling.type != "none")
    d.push_back(fmt::format("RoPE scaling '{}' (factor {})", cfg.rope_scaling.type, cfg.rope_scaling.factor));
  d.push_back(fmt::format("RoPE rotate-half, theta {}", cfg.rope_theta));
  d.push_back(fmt::format("RMSNorm eps {}", cfg.rms_norm_eps));
  d.push_back(cfg.tie_word_embeddings ? "tied embeddings: logits = h . embed^T"
                                      : "separate lm_head");
  if (cfg.sliding_window) d.push_back(fmt::format("sliding window {} (context capped at {})", *cfg.sliding_window, cfg.max_seq));
  for (const auto& s : d) o << "- " << s << "\n";
  o << "\n## Kernels and shapes\n\n";
  o << "Linear layers (y[m, n_out] = x[m, n_in] . W^T; m = prompt length for prefill GEMM, 1 for decode GEMV):\n\n";
  o << "| tensor | role | [n_out, n_in] |\n|---|---|---|\n";
  for (const auto& t : expected_tensors(cfg)) {
    if (t.layer > 0 || t.shape.size() != 2) continue;
    std::string role(role_name(t.role));
    o << "| " << t.name << " | " << role << " | [" << t.shape[0] << ", " << t.shape[1] << "] |\n";
  }
  o << fmt::format("\nOther ops: RMSNorm [m, {}]; RoPE [m, {}, {}] and [m, {}, {}]; attention q [m, {}, {}] "
                   "vs KV cache [{}, max_seq, {}]; SwiGLU [m, {}]; residual add [m, {}]; "
                   "lm_head [{}, {}].\n",
                   cfg.emb_dim, cfg.n_heads, cfg.head_dim, cfg.n_kv_heads, cfg.head_dim, cfg.n_heads,
                   cfg.head_dim, cfg.n_kv_heads, cfg.head_dim, cfg.hidden_dim, cfg.emb_dim,
                   cfg.vocab_size, cfg.emb_dim);
  o << "(Layer 0 listed; every layer has the same shapes.)\n";
  if (const QuantType q = parse_quant(m.dtype); q != QuantType::None) {
    // The base dtype the unquantized tensors keep: the checkpoint's, as the engine reads it.
    const DType base = checkpoint_dtype(cfg, m.model_dir, DType::F32);
    const QuantType head = m.quantize_lm_head.empty() ? QuantType::None : parse_quant(m.quantize_lm_head);
    o << "\n## Quantization (" << m.dtype << ")\n\n```\n"
      << quant_plan_text(plan_quantization(cfg, base, q, head)) << "```\n";
  }
  const auto& p1 = m.phases[1];
  if (p1.numbers.contains("kernels")) {
    o << "\n## Validated kernels (phase 1)\n\n```json\n" << p1.numbers["kernels"].dump(1) << "\n```\n";
  }
  if (m.kernel_configs.contains("tuned")) {
    o << "\n## Tuned kernel configs (phases 4-5)\n\n```json\n" << m.kernel_configs["tuned"].dump(1) << "\n```\n";
  }
  write_generated(ws, ws.architecture(), o.str());
}

void write_todo(const Workspace& ws, const Manifest& m) {
  std::ostringstream o;
  o << "# TODO: " << m.name << "\n\n<!-- generated by llmport deploy from deployment.json -->\n\n";
  if (m.needs_human_review)
    o << "**needs-human-review**: the independent evaluation (phase 7) returned FAIL; see "
         "docs/evaluation_report.md.\n\n";
  o << "## Phase checklist\n\n";
  const auto& gates = phase_gates();
  // A box is ticked only for a phase whose gate was shown to hold (PASS, or PASS with the
  // warnings listed under Follow-ups); the reason says what was measured.
  for (const auto& p : m.phases) {
    bool done = is_pass(p.status);
    o << "- [" << (done ? "x" : " ") << "] Phase " << p.phase << ": " << phase_name(p.phase) << " — **"
      << status_name(p.status) << "**";
    if (!p.reason.empty()) o << ": " << p.reason;
    o << "\n  - gate: " << gates[static_cast<std::size_t>(p.phase)] << "\n";
  }
  o << "\n## Follow-ups\n\n";
  bool any_warning = false;
  for (const auto& p : m.phases)
    for (const auto& w : p.warnings) {
      any_warning = true;
      o << "- [ ] Phase " << p.phase << " (" << phase_name(p.phase) << "): " << w << "\n";
    }
  if (!any_warning) o << "None.\n";
  o << "\n## Active blockers\n\n";
  bool any = false;
  for (const auto& p : m.phases) {
    if (p.status == PhaseStatus::Fail || p.status == PhaseStatus::Blocked) {
      any = true;
      o << "- **Phase " << p.phase << " (" << phase_name(p.phase) << ") " << status_name(p.status)
        << "**: " << p.reason << "\n";
      if (!p.numbers.empty()) o << "  - numbers: `" << p.numbers.dump() << "`\n";
      o << "  - after the fix, resume: `llmport deploy " << shell_quote(m.model_dir.string()) << " --name " << m.name
        << " --workspace " << shell_quote(ws.dir().parent_path().string()) << " --from-phase " << p.phase << "`\n";
    }
  }
  if (m.needs_human_review) {
    any = true;
    o << "- needs-human-review: evaluation verdict FAIL\n";
  }
  if (!any) o << "None.\n";
  o << "\n## Resolved config\n\n```json\n" << m.resolved_config.dump(2) << "\n```\n";
  write_generated(ws, ws.todo(), o.str());
}

void write_phase_timing(const Workspace& ws, const Manifest& m) {
  std::ostringstream o;
  o << "# Phase timing: " << m.name << "\n\n<!-- generated by llmport deploy from deployment.json -->\n\n"
    << "Wall minutes = end - start. Compile minutes = kernel build, weight packing and tuning "
       "sweeps. Runtime seconds = model execution (forward passes, timing runs). Residual "
       "minutes = wall - compile - runtime (orchestration, file I/O, reports).\n\n";
  double tw = 0, tc = 0, tr = 0;
  for (const auto& p : m.phases) {
    if (p.timing.start.empty()) continue;
    const auto& t = p.timing;
    o << "## Phase " << p.phase << ": " << phase_name(p.phase) << " (" << status_name(p.status) << ")\n\n"
      << "- start: " << t.start << "\n- end: " << t.end << "\n"
      << fmt::format("- wall: {:.3f} min\n- compile: {:.3f} min\n- runtime: {:.2f} s\n- residual: {:.3f} min\n\n",
                     t.wall_min, t.compile_min, t.runtime_s, t.residual_min());
  }
  o << "## Summary\n\n| phase | name | status | start | end | wall min | compile min | runtime s | residual min |\n"
       "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : m.phases) {
    const auto& t = p.timing;
    if (t.start.empty()) {
      o << "| " << p.phase << " | " << phase_name(p.phase) << " | " << status_name(p.status) << " | | | | | | |\n";
      continue;
    }
    tw += t.wall_min;
    tc += t.compile_min;
    tr += t.runtime_s;
    o << fmt::format("| {} | {} | {} | {} | {} | {:.3f} | {:.3f} | {:.2f} | {:.3f} |\n", p.phase,
                     phase_name(p.phase), status_name(p.status), t.start, t.end, t.wall_min,
                     t.compile_min, t.runtime_s, t.residual_min());
  }
  o << fmt::format("| total | | | | | {:.3f} | {:.3f} | {:.2f} | {:.3f} |\n", tw, tc, tr,
                   tw - tc - tr / 60.0);
  write_generated(ws, ws.phase_timing(), o.str());
}

void init_progress_files(const Workspace& ws, const Manifest& m) {
  auto init = [](const fs::path& f, const std::string& head) {
    if (!fs::exists(f)) atomic_write(f, head);
  };
  init(ws.progress(), "# Progress: " + m.name +
                          "\n\nAppend-only log of the deployment (one line per event).\n\n");
  init(ws.lessons(), "# Lessons: " + m.name +
                         "\n\nWhat this deployment taught (write after each fix: the symptom, the "
                         "cause, how the gate caught it).\n\n");
  init(ws.debug_log(), "# Debug log: " + m.name +
                           "\n\nDetails of every gate that did not pass (numbers, reason, artifacts).\n\n");
}

void append_lesson(const Workspace& ws, const std::string& text) {
  append_file(ws.lessons(), "## " + now_iso() + "\n\n" + text + "\n\n");
}

void log_progress(const Workspace& ws, const std::string& line) {
  append_file(ws.progress(), "- " + now_iso() + " " + line + "\n");
}

void log_phase(const Workspace& ws, const PhaseResult& r) {
  log_progress(ws, fmt::format("phase {} ({}): {}{}{}", r.phase, phase_name(r.phase), status_name(r.status),
                               r.reason.empty() ? "" : ": ", r.reason));
  if (r.status == PhaseStatus::Pass) return;
  std::ostringstream o;
  o << "## " << now_iso() << " phase " << r.phase << " (" << phase_name(r.phase) << "): "
    << status_name(r.status) << "\n\n" << r.reason << "\n\n";
  for (const auto& w : r.warnings) o << "- warning: " << w << "\n";
  if (!r.numbers.empty()) o << "\n```json\n" << r.numbers.dump(2) << "\n```\n";
  for (const auto& a : r.artifacts) o << "- artifact: " << a << "\n";
  o << "\n";
  append_file(ws.debug_log(), o.str());
  // What the pipeline learned from a gate that did not hold: the symptom and, where the
  // phase found it, the diagnosis (phase 3 saves the first suspicious layer).
  if (r.status == PhaseStatus::Fail || r.status == PhaseStatus::Blocked) {
    std::string lesson = fmt::format("phase {} ({}) {}: {}", r.phase, phase_name(r.phase), status_name(r.status), r.reason);
    if (r.numbers.contains("diagnosis_first_suspicious_layer") &&
        r.numbers["diagnosis_first_suspicious_layer"].is_number_integer() &&
        r.numbers["diagnosis_first_suspicious_layer"].get<int>() >= 0)
      lesson += fmt::format("\n\nDiagnosis (phases/phase3/diagnosis.md): layer {} is the first whose output departs "
                            "from the reference; look there first.",
                            r.numbers["diagnosis_first_suspicious_layer"].get<int>());
    else if (r.numbers.contains("diagnosis_first_suspicious") && r.numbers["diagnosis_first_suspicious"].is_string())
      lesson += fmt::format("\n\nDiagnosis (phases/phase3/diagnosis.md): every layer's output agrees; {} is the "
                            "first row that departs from the reference (its weight, epsilon or input).",
                            r.numbers["diagnosis_first_suspicious"].get<std::string>());
    append_lesson(ws, lesson);
  }
}

void write_all(const Workspace& ws, const Manifest& m, const ModelConfig& cfg) {
  write_readme(ws, m);
  write_architecture(ws, m, cfg);
  write_todo(ws, m);
  write_makefile(ws, m);
  write_phase_timing(ws, m);
}

}  // namespace llmport::deploy
