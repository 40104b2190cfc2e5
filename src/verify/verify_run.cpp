// The verify gate: prompts -> reference trajectories -> engine free-running and
// teacher-forced runs -> verdict, counters and report.
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <unistd.h>

#include "llmport/chat_template.hpp"
#include "llmport/error.hpp"
#include "llmport/registry.hpp"
#include "llmport/runner.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/verify.hpp"
#include "llmport/weights.hpp"
#include "verify/format.hpp"
#include "verify/hf_reference.hpp"

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

void check_ids(const std::vector<int>& ids, const ModelConfig& cfg, int n_steps, const std::string& where) {
  if (ids.empty()) throw UsageError(where + ": empty prompt");
  for (int id : ids)
    if (id < 0 || id >= cfg.vocab_size)
      throw UsageError(where + ": token id " + std::to_string(id) + " outside the vocabulary [0, " +
                       std::to_string(cfg.vocab_size) + ")");
  const int need = static_cast<int>(ids.size()) + n_steps;
  if (cfg.max_seq > 0 && need > cfg.max_seq)
    throw UsageError(where + ": prompt of " + std::to_string(ids.size()) + " tokens + " + std::to_string(n_steps) +
                     " steps exceeds the context of " + std::to_string(cfg.max_seq) + " tokens");
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

// Teacher-forces llmport's other computations (the oracle, and the fp32 cpu engine when
// the engine is not that) along the first reference sequence and counts the reference
// logits they reproduce bit for bit: a golden copied from llmport's own output matches
// one of them exactly, an independent one almost nowhere. The first kSelfMatchSteps steps
// of one sequence are evidence enough and keep the scalar oracle's cost bounded.
constexpr int kSelfMatchSteps = 8;
std::vector<SelfMatch> self_matches_of_llmport_kernels(const ModelConfig& cfg, const WeightStore& weights,
                                                      const EngineOptions& engine_opt, const RunnerInfo& engine,
                                                      const std::vector<int>& ids,
                                                      const std::vector<StepRecord>& ref_steps) {
  std::vector<std::pair<std::string, std::unique_ptr<EngineRunner>>> sides;
  sides.emplace_back("oracle", make_oracle_runner(cfg, weights, engine_opt.threads));
  if (engine.backend != "cpu" || engine.dtype != "fp32") {
    EngineOptions fp32;
    fp32.backend = "cpu";
    fp32.dtype = DType::F32;
    fp32.threads = engine_opt.threads;
    sides.emplace_back("cpu fp32 engine", std::make_unique<EngineRunner>(cfg, weights, fp32, "engine"));
  }
  std::vector<SelfMatch> out;
  const int n = std::min<int>(kSelfMatchSteps, static_cast<int>(ref_steps.size()));
  for (auto& [name, runner] : sides) {
    SelfMatch m{name, 0, 0};
    runner->prefill(ids);
    int pos = static_cast<int>(ids.size());
    for (int k = 0; k < n; ++k) {
      if (k > 0) runner->decode_step(ref_steps[static_cast<std::size_t>(k - 1)].token, pos++);
      count_self_match(ref_steps[static_cast<std::size_t>(k)], runner->last_logits(), m);
    }
    out.push_back(m);
  }
  return out;
}

// Independent = by kind (not the oracle), by provenance (assess_provenance) and by
// content (no llmport computation reproduces it bit for bit).
void decide_independence(VerifyResult& res) {
  for (const auto& m : res.self_matches)
    if (m.compared > 0 && m.share() >= kSelfMatchShare && res.independence_finding.empty())
      res.independence_finding = "content: " + fmt_g(100.0 * m.share(), 4) + "% of " + std::to_string(m.compared) +
                                 " compared logits equal llmport's " + m.against + " output bit for bit";
  res.reference_independent = res.independence_finding.empty();
}

// What keeps a passing run from a plain PASS, independence first (docs/verification.md).
std::vector<std::string> verdict_caps(const VerifyResult& res, bool builtin_set) {
  std::vector<std::string> caps;
  if (!res.reference_independent) caps.push_back("reference not independent: " + res.independence_finding);
  const int need_prompts = builtin_set ? kDefaultPrompts : kMinPrompts;
  const int need_steps = builtin_set ? kDefaultSteps : kMinSteps;
  const int distinct = res.distinct_prompts();
  if (distinct < need_prompts || res.n_steps < need_steps)
    caps.push_back("depth: " + std::to_string(distinct) + " prompts x " + std::to_string(res.n_steps) +
                   " steps, fewer than the required " + std::to_string(need_prompts) + " x " +
                   std::to_string(need_steps) +
                   (distinct < res.n_prompts ? " (" + std::to_string(res.n_prompts - distinct) + " repeated prompts)"
                                             : std::string()));
  if (res.dtype == "fp32" && kl_bound_for(DType::F32, res.reference_dtype) != kKlBoundFp32)
    caps.push_back("the reference computed in " + res.reference_dtype +
                   ": it cannot check an fp32 engine at fp32 precision (bf16 KL bound used)");
  if (res.reference_program.is_object() && !res.reference_program.value("shipped", true))
    caps.push_back("hf reference program " + res.reference_program.value("program", std::string()) +
                   " is not the shipped tools/hf_reference.py");
  if (res.backend == "reference") caps.push_back("the engine runner uses the reference backend, not the target's kernels");
  if (!res.fault.empty()) caps.push_back("a test-only fault was planted in the engine: " + res.fault);
  return caps;
}

}  // namespace

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
  res.full = true;  // --quick with a built-in set clears it below

  for (const char* name : {"report.json", "report.md"})
    if (!opt.report_dir.empty() && fs::exists(opt.report_dir / name))
      throw UsageError((opt.report_dir / name).string() + " exists; not overwriting (choose another --report-dir)");
  const ModelConfig cfg =
      load_model_config(model_dir, opt.max_seq > 0 ? std::optional<int>(opt.max_seq) : std::nullopt);
  const WeightStore weights = WeightStore::open(cfg.dir.empty() ? model_dir : cfg.dir, cfg);
  for (const auto& w : weights.warnings()) res.warnings.push_back("weights: " + w);
  std::unique_ptr<Tokenizer> tok;
  const fs::path tok_dir = cfg.dir.empty() ? model_dir : cfg.dir;
  if (Tokenizer::exists(tok_dir)) tok = Tokenizer::load(tok_dir);

  // ---- reference kind and prompt set
  const std::string& ref = opt.reference;
  std::shared_ptr<RecordFile> golden;
  std::vector<Prepared> prompts;
  int n_steps = opt.n_steps;
  bool builtin_set = false;  // a built-in prompt set: oracle and hf run all of it by default
  if (ref.rfind("golden:", 0) == 0) {
    const fs::path gf = ref.substr(7);
    if (gf.empty()) throw UsageError("--reference golden:FILE needs a file");
    golden = std::make_shared<RecordFile>(read_record_file(gf));
    res.reference_kind = "golden";
    res.reference_source = gf.string() + (golden->producer.empty() ? "" : " (" + golden->producer + ")");
    res.reference_dtype = golden->compute_dtype;
    res.prompt_set = "golden";
    res.full = true;  // all of the golden's prompts, implied
    n_steps = golden->n_steps;
    bool any_text = false;
    for (const auto& s : golden->sequences) {
      prompts.push_back({s.name, s.prompt, s.prompt_ids, &s});
      any_text = any_text || s.prompt_rendering != "ids";
    }
    res.prompt_rendering = any_text ? golden->sequences[0].prompt_rendering + " (golden prompt ids)" : "ids";
  } else if (ref == "oracle" || ref == "hf") {
    res.reference_kind = ref;
    std::vector<PromptSpec> specs;
    bool chat = false;
    if (opt.prompts_file) {
      specs = read_prompt_file(*opt.prompts_file);
      res.prompt_set = "file:" + opt.prompts_file->string();
    } else if (!tok) {
      // No tokenizer: text prompts are impossible, so the built-in deterministic id set.
      const int context = cfg.max_seq > 0 ? cfg.max_seq : cfg.max_position_embeddings;
      specs = builtin_id_prompts(cfg.vocab_size, context, n_steps);
      res.prompt_set = "ids";
      res.warnings.push_back("the model has no tokenizer: built-in deterministic id prompts (seed " +
                             std::to_string(kIdPromptSeed) + ", ids < vocab_size " + std::to_string(cfg.vocab_size) +
                             ")");
      builtin_set = true;
    } else {
      chat = !tok->chat_template().empty();
      res.prompt_set = chat ? "instruct" : "base";
      specs = read_prompt_file(prompt_set_dir() / (res.prompt_set + ".json"));
      builtin_set = true;
    }
    if (builtin_set && opt.quick && static_cast<int>(specs.size()) > kQuickPrompts) specs.resize(kQuickPrompts);
    res.full = !(builtin_set && opt.quick);
    if (opt.prompts_file && tok && !tok->chat_template().empty()) chat = true;
    res.prompt_rendering = chat ? "chat_template" : res.prompt_set == "ids" ? "ids" : "raw";
    for (const auto& p : specs) {
      Prepared pp{p.name, p.text, {}, nullptr};
      if (p.ids) {
        pp.ids = *p.ids;
      } else {
        if (!tok)
          throw UsageError(model_dir.string() + " has no tokenizer.json: give prompt ids (--prompts FILE with "
                           "\"prompt_ids\") or a golden with id sequences (--reference golden:FILE)");
        if (chat) {
          try {
            pp.ids = encode_prompt(*tok, *p.text, true);
          } catch (const ConfigError& e) {
            // The chat template cannot be rendered by llmport yet: fall back to raw text
            // (both sides see the same ids) and say so.
            chat = false;
            res.prompt_rendering = std::string("raw (chat template not rendered: ") + e.what() + ")";
            res.warnings.push_back("instruct prompts fed as raw text: " + std::string(e.what()));
            pp.ids = encode_prompt(*tok, *p.text, false);
          }
        } else {
          pp.ids = encode_prompt(*tok, *p.text, false);
        }
      }
      prompts.push_back(std::move(pp));
    }
    if (ref == "hf") {
      fs::path out_dir = opt.report_dir.empty()
                             ? fs::temp_directory_path() / ("llmport-hf-" + std::to_string(::getpid()))
                             : opt.report_dir;
      fs::create_directories(out_dir);
      const fs::path out = out_dir / "hf_reference.json";
      const DType engine_dtype = opt.engine.dtype.value_or(checkpoint_dtype(cfg, weights));
      res.reference_program = verify_detail::run_hf_reference(opt.python, tok_dir, specs, chat, n_steps, out,
                                                              engine_dtype == DType::F32 ? "float32" : "");
      golden = std::make_shared<RecordFile>(read_record_file(out));
      res.reference_program["versions"] = golden->versions;
      res.reference_source = out.string() + " (" + res.reference_program.value("program", std::string()) + ")";
      res.reference_dtype = golden->compute_dtype;
      if (golden->sequences.size() != prompts.size())
        throw UsageError(out.string() + ": has " + std::to_string(golden->sequences.size()) + " sequences for " +
                         std::to_string(prompts.size()) + " prompts");
      for (std::size_t i = 0; i < prompts.size(); ++i) {
        // transformers tokenized the texts itself; its ids drive both sides.
        prompts[i].ids = golden->sequences[i].prompt_ids;
        prompts[i].golden = &golden->sequences[i];
      }
      n_steps = golden->n_steps;
    } else {
      res.reference_source = "llmport reference kernels (fp32)";
      res.reference_dtype = "fp32";
      res.independence_finding = "oracle";
    }
  } else {
    throw UsageError("--reference: unknown value '" + ref + "' (expected golden:FILE, oracle or hf)");
  }
  if (golden) {
    const ReferenceProvenance prov = assess_provenance(*golden);
    res.reference_producer = prov.producer;
    res.independence_finding = prov.finding;
    res.reference_sequences = static_cast<int>(golden->sequences.size());
    res.reference_steps = golden->n_steps;
  }
  res.fault = opt.engine.fault.spec;
  res.top_k = opt.top_k;
  if (res.top_k < 1) throw UsageError("verify: top-k must be >= 1");
  res.n_prompts = static_cast<int>(prompts.size());
  res.n_steps = n_steps;
  if (n_steps <= 0) throw UsageError("verify: number of steps must be > 0");
  for (const auto& p : prompts) check_ids(p.ids, cfg, n_steps, "prompt " + p.name);

  // ---- runners
  EngineRunner engine(cfg, weights, opt.engine, "engine");
  const RunnerInfo ei = engine.info();
  res.runner_kind = ei.kind;
  res.backend = ei.backend;
  res.isa = ei.isa;
  res.dtype = ei.dtype;
  if (const auto& ks = opt.engine.kernels) {
    // What the engine actually got (filled while its linears were built), not the label.
    res.heuristic_default_configs = !ks->registry || !ks->heuristic_used.empty();
    res.kernel_selection = {{"registry", ks->registry && ks->registry->writable_dir()
                                             ? nlohmann::json(ks->registry->writable_dir()->string())
                                             : nlohmann::json(nullptr)},
                            {"chosen", ks->chosen},
                            {"heuristic_used", ks->heuristic_used}};
  }
  res.kl_bound = opt.kl_bound.value_or(kl_bound_for(parse_dtype(ei.dtype), res.reference_dtype));
  if (!(res.kl_bound > 0)) throw UsageError("verify: the KL bound must be > 0");
  std::unique_ptr<EngineRunner> oracle;
  if (res.reference_kind == "oracle") oracle = make_oracle_runner(cfg, weights, opt.engine.threads);
  log("verify " + res.model_name + ": engine " + ei.backend + "/" + ei.dtype + " (" + ei.isa + "), reference " +
      res.reference_kind + (res.independence_finding.empty() ? "" : " (not independent: " + res.independence_finding + ")") + ", prompt set " +
      res.prompt_set + " [" + res.prompt_rendering + "], " + std::to_string(prompts.size()) + " prompts x " +
      std::to_string(n_steps) + " steps");

  engine.engine().backend().reset_counters();
  SelfMatch engine_match{"engine", 0, 0};
  double kl_sum = 0.0;
  int64_t n_tf = 0, n_agree = 0;
  bool first_kind = true;
  std::string worst_kl_where;
  for (std::size_t pi = 0; pi < prompts.size(); ++pi) {
    const Prepared& p = prompts[pi];
    PromptVerdict pv;
    pv.name = p.name;
    pv.prompt = p.text;
    pv.prompt_ids = p.ids;
    // Reference trajectory.
    std::vector<StepRecord> ref_steps;
    if (p.golden) {
      ref_steps = p.golden->steps;
      if (tok && p.golden->prompt && p.golden->prompt_rendering == "raw") {
        const auto ours = tok->encode(*p.golden->prompt);
        if (ours != p.ids) {
          pv.tokenization_ok = false;
          pv.tokenization = "llmport encodes the prompt to " + format_ids(ours) + ", the reference used " +
                            format_ids(p.ids);
        } else {
          pv.tokenization = "matches the reference";
        }
      }
    } else {
      ref_steps = generate_greedy(*oracle, p.ids, n_steps);
    }
    const KlKind kind = kl_kind_for(ref_steps);
    if (first_kind) res.kl_kind = kind;
    else if (kind != res.kl_kind) res.kl_kind = KlKind::Coarsened;  // mixed: report the weaker
    first_kind = false;
    for (const auto& s : ref_steps) pv.reference_tokens.push_back(s.token);

    // Free-running.
    const auto eng_steps = generate_greedy(engine, p.ids, n_steps);
    res.engine_forward_calls += eng_steps.empty() ? 0 : static_cast<int64_t>(eng_steps.size());
    res.engine_tokens_generated += static_cast<int64_t>(eng_steps.size());
    for (const auto& s : eng_steps) pv.engine_tokens.push_back(s.token);
    pv.free_running = check_free_running(eng_steps, ref_steps, n_steps, res.top_k);

    // Teacher-forced: the engine follows the reference's tokens.
    engine.prefill(p.ids);
    res.engine_forward_calls += 1;
    int pos = static_cast<int>(p.ids.size());
    double p_kl = 0.0;
    int p_agree = 0;
    for (int k = 0; k < static_cast<int>(ref_steps.size()); ++k) {
      if (k > 0) {
        engine.decode_step(ref_steps[static_cast<std::size_t>(k - 1)].token, pos++);
        res.engine_forward_calls += 1;
      }
      auto st = compare_step(k, ref_steps[static_cast<std::size_t>(k)], engine.last_logits(), kind, res.top_k);
      if (p.golden) count_self_match(ref_steps[static_cast<std::size_t>(k)], engine.last_logits(), engine_match);
      p_kl += st.kl;
      pv.max_kl = std::max(pv.max_kl, st.kl);
      if (st.kl >= res.max_kl) {
        res.max_kl = st.kl;
        worst_kl_where = "prompt " + p.name + " step " + std::to_string(k) + ": engine top-5 " +
                         format_top(st.engine_top) + ", reference top-5 " + format_top(st.reference_top);
      }
      p_agree += st.top1_agree ? 1 : 0;
      if (!st.pass()) pv.teacher_forced_top5_ok = false;
      pv.teacher_forced.push_back(std::move(st));
    }
    const int nt = static_cast<int>(pv.teacher_forced.size());
    res.teacher_forced_steps += nt;
    pv.mean_kl = nt ? p_kl / nt : 0.0;
    pv.top1_agreement = nt ? static_cast<double>(p_agree) / nt : 0.0;
    kl_sum += p_kl;
    n_tf += nt;
    n_agree += p_agree;

    // Failures of this prompt, first one first.
    if (!pv.tokenization_ok) res.failures.push_back("prompt " + p.name + ": tokenization differs: " + pv.tokenization);
    if (!pv.free_running.pass) res.failures.push_back("prompt " + p.name + " (free-running): " + pv.free_running.message);
    for (const auto& st : pv.teacher_forced)
      if (!st.pass()) {
        res.failures.push_back(tf_failure(pv, st));
        break;
      }
    log("  " + p.name + ": free-running " + (pv.free_running.pass ? "PASS" : "FAIL") +
        (pv.free_running.first_divergence >= 0 ? " (diverged at step " + std::to_string(pv.free_running.first_divergence) + ")" : "") +
        ", teacher-forced top-5 " + (pv.teacher_forced_top5_ok ? "ok" : "FAIL") + ", top-1 " +
        fmt_g(100.0 * pv.top1_agreement, 4) + "%, mean KL " + fmt_g(pv.mean_kl));
    res.prompts.push_back(std::move(pv));
  }
  res.dispatch_counters = engine.engine().backend().counters().calls;
  if (golden && !prompts.empty()) {
    res.self_matches.push_back(engine_match);
    for (auto& m : self_matches_of_llmport_kernels(cfg, weights, opt.engine, ei, prompts.front().ids,
                                                   prompts.front().golden->steps))
      res.self_matches.push_back(m);
  }
  res.mean_kl = n_tf ? kl_sum / static_cast<double>(n_tf) : 0.0;
  res.top1_agreement = n_tf ? static_cast<double>(n_agree) / static_cast<double>(n_tf) : 0.0;
  res.free_running_pass = !res.prompts.empty();
  res.teacher_forced_pass = !res.prompts.empty();
  for (const auto& pv : res.prompts) {
    res.free_running_pass = res.free_running_pass && pv.free_running.pass && pv.tokenization_ok;
    res.teacher_forced_pass = res.teacher_forced_pass && pv.teacher_forced_top5_ok;
  }
  if (!(res.mean_kl <= res.kl_bound)) {
    res.teacher_forced_pass = false;
    res.failures.push_back("mean KL per step " + fmt_g(res.mean_kl) + " exceeds the bound " + fmt_g(res.kl_bound) +
                           " (max " + fmt_g(res.max_kl) + " at " + worst_kl_where + ")");
  }
  if (res.prompts.empty()) res.failures.push_back("no prompts were run");
  res.pass = res.free_running_pass && res.teacher_forced_pass && res.failures.empty();
  decide_independence(res);
  res.caps = verdict_caps(res, builtin_set);
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log(std::string("verify: ") + res.verdict() + " (mean KL " + fmt_g(res.mean_kl) + " <= " +
      fmt_g(res.kl_bound) + " required, top-1 agreement " + fmt_g(100.0 * res.top1_agreement, 4) + "%)");
  if (!opt.report_dir.empty()) {
    res.report_dir = opt.report_dir;
    write_verify_report(opt.report_dir, res);
  }
  return res;
}

}  // namespace llmport
