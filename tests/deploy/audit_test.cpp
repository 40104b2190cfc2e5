// Mutation tests of phase 7's gate audit: for every row, a clean input gives "ok" and the
// fault the row guards, planted into that input, flips it (a row that cannot fail would be
// a defect). The rows are pure functions of the manifest, the re-run and the selection
// (src/deploy/audit.hpp); tests/deploy/deploy_pipeline_test.cpp runs them end to end.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "deploy/audit.hpp"
#include "llmport/verify.hpp"
#include "support/test_support.hpp"

namespace llmport::deploy {
namespace {

// A deployment and a re-run with nothing wrong: 8 prompts x 32 steps against an
// independent golden, fp32 on the cpu backend, tuned configs, every count right.
struct Clean {
  Manifest m;
  VerifyResult r;
  KernelSelection sel;
  static constexpr uint64_t kPerForward = 10;
  Clean() {
    m.name = "x";
    m.target = "cpu";
    m.dtype = "fp32";
    m.isa = "avx512";
    m.file_hashes = {{"config.json", "aa"}, {"model.safetensors", "bb"}};
    m.reference.kind = "golden";
    m.reference.file = "/golden.json";
    m.reference_hash = "cc";
    for (auto& p : m.phases) p.status = PhaseStatus::Pass;
    r.pass = true;
    r.runner_kind = "engine";
    r.backend = "cpu";
    r.isa = "avx512";
    r.dtype = "fp32";
    r.reference_kind = "golden";
    r.reference_independent = true;
    r.reference_dtype = "float32";
    r.n_prompts = 8;
    r.n_steps = 32;
    r.top_k = kTopK;
    r.kl_bound = kKlBoundFp32;
    r.engine_tokens_generated = 256;
    r.teacher_forced_steps = 256;
    r.engine_forward_calls = 512;
    r.dispatch_counters = {{"cpu/avx512:gemv", 512 * 6}, {"cpu/avx512:rmsnorm", 512 * 4}};
    r.heuristic_default_configs = false;
    sel.chosen = {{"n=64 k=64", {}}};
  }
};

TEST(Audit, PhasesRowFailsOnAFailedPhaseAndWarnsOnACarriedWarning) {
  Clean c;
  for (const auto& a : audit_phases(c.m)) EXPECT_EQ(a.result, "ok") << a.check;
  EXPECT_EQ(audit_phases(c.m).size(), 7u);
  c.m.phases[2].status = PhaseStatus::Fail;
  c.m.phases[4].status = PhaseStatus::PassWithWarnings;
  c.m.phases[4].warnings = {"something real"};
  c.m.phases[5].status = PhaseStatus::NotRun;
  auto rows = audit_phases(c.m);
  EXPECT_EQ(rows[2].result, "FAIL");
  EXPECT_EQ(rows[4].result, "warning");
  EXPECT_NE(rows[4].detail.find("something real"), std::string::npos);
  EXPECT_EQ(rows[5].result, "FAIL");
  EXPECT_EQ(EvaluationReport::verdict_of({rows[4]}), "PASS-with-warnings");
}

TEST(Audit, TargetRowFailsForTheReferenceBackendOrAMissingOne) {
  Clean c;
  EXPECT_EQ(audit_target(c.m, {"reference", "cpu"}).result, "ok");
  c.m.target = "reference";
  EXPECT_EQ(audit_target(c.m, {"reference", "cpu"}).result, "FAIL");
  c.m.target = "cuda";
  EXPECT_EQ(audit_target(c.m, {"reference", "cpu"}).result, "FAIL");
}

TEST(Audit, WeightsRowFailsOnAChangedMissingOrNewFile) {
  Clean c;
  EXPECT_EQ(audit_weights(c.m, c.m.file_hashes, "").result, "ok");
  auto changed = c.m.file_hashes;
  changed["model.safetensors"] = "bd";
  auto row = audit_weights(c.m, changed, "");
  EXPECT_EQ(row.result, "FAIL");
  // One line naming the file: regress and `verify --deployment` print it as their FAIL line.
  EXPECT_EQ(row.detail.rfind("weights changed since deployment: model.safetensors (sha256 differs", 0), 0u)
      << row.detail;
  auto missing = c.m.file_hashes;
  missing.erase("model.safetensors");
  EXPECT_NE(audit_weights(c.m, missing, "").detail.find("model.safetensors (missing)"), std::string::npos);
  auto extra = c.m.file_hashes;
  extra["model-2.safetensors"] = "ee";
  EXPECT_EQ(audit_weights(c.m, extra, "").result, "FAIL");
  EXPECT_EQ(audit_weights(c.m, {}, "cannot read config.json").result, "FAIL");
  c.m.file_hashes.clear();
  EXPECT_EQ(audit_weights(c.m, {}, "").result, "FAIL");  // nothing recorded proves nothing
}

// The check evaluate, regress and `verify --deployment` share, on real files; and status's
// cheap size+mtime comparison beside it: it flags a rewrite (new mtime) and a vanished or
// added file, and is fooled only by a same-size rewrite with the mtime put back.
TEST(Audit, ModelFilesAreHashedAndStatsCatchARewrite) {
  test::TempDir t;
  const auto dir = t.path();
  test::write_file(dir / "config.json", "{}");
  test::write_file(dir / "model.safetensors", std::string(64, 'a'));
  Manifest m;
  m.file_hashes = hash_model_files(dir, &m.file_stats);
  ASSERT_EQ(m.file_stats.size(), 2u);
  EXPECT_EQ(audit_model_files(m, dir).result, "ok");
  EXPECT_TRUE(stat_changed_files(m, dir).empty());

  const auto mtime = m.file_stats["model.safetensors"].mtime_ns;
  test::write_file(dir / "model.safetensors", std::string(63, 'a') + "b");  // same size
  const timespec later[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(mtime / 1000000000) + 5, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, (dir / "model.safetensors").c_str(), later, 0), 0);
  std::map<std::string, FileStat> now;
  const AuditItem a = audit_model_files(m, dir, &now);
  EXPECT_EQ(a.result, "FAIL");
  EXPECT_EQ(a.detail.rfind("weights changed since deployment: model.safetensors ", 0), 0u) << a.detail;
  EXPECT_NE(now["model.safetensors"].mtime_ns, mtime);
  EXPECT_EQ(stat_changed_files(m, dir), std::vector<std::string>{"model.safetensors"});

  const timespec back[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(mtime / 1000000000), static_cast<long>(mtime % 1000000000)}};
  ASSERT_EQ(utimensat(AT_FDCWD, (dir / "model.safetensors").c_str(), back, 0), 0);
  EXPECT_TRUE(stat_changed_files(m, dir).empty());      // the stat cannot tell
  EXPECT_EQ(audit_model_files(m, dir).result, "FAIL");  // the hash can

  std::filesystem::remove(dir / "config.json");
  test::write_file(dir / "tokenizer.json", "x");
  test::write_file(dir / "model-2.safetensors", "x");  // beside model.safetensors, read by no one
  EXPECT_EQ(stat_changed_files(m, dir), (std::vector<std::string>{"config.json (missing)", "tokenizer.json (new)"}));
  EXPECT_EQ(audit_model_files(m, dir).result, "FAIL");
  EXPECT_EQ(audit_model_files(m, dir / "nope").result, "FAIL");  // no model directory at all
}

TEST(Audit, ReferenceFileRowFailsWhenTheGoldenChanged) {
  Clean c;
  EXPECT_EQ(audit_reference_file(c.m, "cc").result, "ok");
  EXPECT_EQ(audit_reference_file(c.m, "cd").result, "FAIL");
  EXPECT_EQ(audit_reference_file(c.m, "").result, "FAIL");
  EXPECT_NE(audit_reference_file(c.m, "cd").detail.find(" changed since deployment (sha256 differs"), std::string::npos);
  EXPECT_NE(audit_reference_file(c.m, "").detail.find(" missing or unreadable since deployment"), std::string::npos);
}

TEST(Audit, IndependenceRowWarnsForEveryFinding) {
  Clean c;
  EXPECT_EQ(audit_reference_independence(c.r).result, "ok");
  // The row shows the least copy-direction slope of the re-run (over all sequences).
  c.r.copy_directions = {{"oracle", "s0", 96, 0, 0.1, 0.05}, {"oracle", "all", 384, 0, 0.46, 0.04},
                         {"engine", "all", 384, 0, 0.53, 0.05}};
  EXPECT_NE(audit_reference_independence(c.r).detail.find("least slope 0.46 +- 0.04 against llmport's oracle"),
            std::string::npos)
      << audit_reference_independence(c.r).detail;
  // A reference whose content shows no independent rounding warns as a finding does.
  c.r.independence_unshown = "sequence s0: 90 of 128 logits too far from llmport's engine output to fit";
  EXPECT_EQ(audit_reference_independence(c.r).result, "warning");
  EXPECT_EQ(audit_reference_independence(c.r).detail.rfind("independence not shown by its content (sequence s0: 90 of ", 0),
            0u)
      << audit_reference_independence(c.r).detail;
  c.r.independence_unshown.clear();
  for (const char* finding : {"oracle", "provenance: produced by llmport (llmport 0.1)",
                              "content: 100% of 1280 compared logits equal llmport's engine output bit for bit",
                              "content: sequence s0: its logits differ from llmport's oracle output (rms 1e-06) in no "
                              "relation to that computation's own rounding"}) {
    c.r.reference_independent = false;
    c.r.independence_finding = finding;
    auto row = audit_reference_independence(c.r);
    EXPECT_EQ(row.result, "warning") << finding;
    EXPECT_NE(row.detail.find(finding), std::string::npos);
  }
}

TEST(Audit, DepthRowComparesWithTheMinimumNotWithTheFile) {
  Clean c;
  EXPECT_EQ(audit_reference_depth(c.r, {8, 32}).result, "ok");
  // A golden cut to 1 step: the run did all it holds, but that is under the minimum.
  c.r.n_steps = 1;
  auto row = audit_reference_depth(c.r, {8, 1});
  EXPECT_EQ(row.result, "warning");
  EXPECT_NE(row.detail.find("8 prompts (8 distinct) x 1 steps"), std::string::npos) << row.detail;
  EXPECT_NE(row.detail.find("4 x 24"), std::string::npos) << row.detail;
  // Fewer than the reference holds: the re-run skipped work.
  EXPECT_EQ(audit_reference_depth(c.r, {8, 32}).result, "FAIL");
  c.r.n_steps = 32;
  c.r.n_prompts = 3;
  EXPECT_EQ(audit_reference_depth(c.r, {3, 32}).result, "warning");
  EXPECT_EQ(audit_reference_depth(c.r, {-1, 32}).result, "FAIL");  // a built-in set runs all 8
  // Four sequences that are one prompt four times are one prompt deep.
  Clean d;
  d.r.n_prompts = 4;
  d.r.prompts.resize(4);
  for (auto& p : d.r.prompts) p.prompt_ids = {1, 2, 3};
  auto dup = audit_reference_depth(d.r, {4, 32});
  EXPECT_EQ(dup.result, "warning");
  EXPECT_NE(dup.detail.find("(1 distinct)"), std::string::npos) << dup.detail;
  // Four distinct prompts that are one story's prompt and its first 1, 2 and 3 tokens:
  // each repeats the first one's steps, 32 + 1 + 1 + 1 distinct steps in all.
  Clean e;
  e.r.n_prompts = 4;
  std::vector<int> story = {1, 2, 3};
  for (int t = 0; t < 40; ++t) story.push_back(100 + t);
  for (int k = 0; k < 4; ++k) {
    PromptVerdict pv;
    pv.prompt_ids.assign(story.begin(), story.begin() + 3 + k);
    pv.reference_tokens.assign(story.begin() + 3 + k, story.begin() + 3 + k + 32);
    e.r.prompts.push_back(pv);
  }
  EXPECT_EQ(e.r.distinct_prompts(), 4);
  EXPECT_EQ(e.r.distinct_steps(), 35);
  auto chained = audit_reference_depth(e.r, {4, 32});
  EXPECT_EQ(chained.result, "warning");
  EXPECT_NE(chained.detail.find("(4 distinct) x 32 steps, 35 distinct steps"), std::string::npos) << chained.detail;
}

TEST(Audit, TolerancesRowFailsOnAnyNonDefaultParameter) {
  Clean c;
  EXPECT_EQ(audit_tolerances(c.r, DType::F32).result, "ok");
  c.r.kl_bound = 1.0;
  EXPECT_EQ(audit_tolerances(c.r, DType::F32).result, "FAIL");
  c.r.kl_bound = kKlBoundBf16;  // the bf16 bound on an fp32 deployment is 1250x too loose
  EXPECT_EQ(audit_tolerances(c.r, DType::F32).result, "FAIL");
  EXPECT_EQ(audit_tolerances(c.r, DType::BF16).result, "ok");
  c.r.top_k = 20;
  EXPECT_EQ(audit_tolerances(c.r, DType::BF16).result, "FAIL");
}

// A quantized deployment's re-run must use the KLD gate with the bounds the manifest
// records: another gate, top-k or bound is FAIL; the deployment's own (non-default) bounds
// are a warning; an unquantized deployment has no KLD row to pass.
TEST(Audit, KldGateRowFailsOnAnotherGateOrBoundAndWarnsOnOwnBounds) {
  Clean c;
  c.m.dtype = "q4_0";
  c.r.dtype = "q4_0";
  c.r.gate = "kld";
  c.r.kl_bound = kld_gate_defaults(QuantType::Q4_0).max_mean_kl;
  c.r.min_top1 = kld_gate_defaults(QuantType::Q4_0).min_top1;
  EXPECT_EQ(audit_kld_gate(c.r, c.m).result, "ok") << audit_kld_gate(c.r, c.m).detail;
  for (int i = 0; i < 4; ++i) {
    Clean d = c;
    if (i == 0) d.r.gate = "token-sets";
    if (i == 1) d.r.kl_bound = 1.0;
    if (i == 2) d.r.min_top1 = 0.5;
    if (i == 3) d.r.top_k = 20;
    EXPECT_EQ(audit_kld_gate(d.r, d.m).result, "FAIL") << i;
  }
  Clean own = c;  // deploy --kl-bound 0.2: recorded, re-run with it, and flagged
  own.m.verify_kl_bound = 0.2;
  own.r.kl_bound = 0.2;
  const AuditItem w = audit_kld_gate(own.r, own.m);
  EXPECT_EQ(w.result, "warning");
  EXPECT_NE(w.detail.find("set by the deployment"), std::string::npos) << w.detail;
  own.r.kl_bound = kld_gate_defaults(QuantType::Q4_0).max_mean_kl;  // re-run ignored the recorded bound
  EXPECT_EQ(audit_kld_gate(own.r, own.m).result, "FAIL");
  Clean plain;
  EXPECT_EQ(audit_kld_gate(plain.r, plain.m).result, "FAIL");
}

// The defaults of a model more sensitive to the rounding are derived from the re-run's
// predicted cost (derived_kld_gate): a re-run gated by them is "the defaults"; one that
// kept the dtype's fixed bounds instead, or widened past them, is not the deployment's.
TEST(Audit, KldGateRowHoldsTheReRunToTheBoundsItsPredictedCostDerives) {
  Clean c;
  c.m.dtype = "q8_0";
  c.r.dtype = "q8_0";
  c.r.gate = "kld";
  c.r.predicted_mean_kl = 4e-3;  // 2x: 8e-3
  c.r.predicted_top1 = 0.98;     // 1 - 3 x 0.02: 0.94
  c.r.kl_bound = 8e-3;
  c.r.min_top1 = 0.94;
  const AuditItem ok = audit_kld_gate(c.r, c.m);
  EXPECT_EQ(ok.result, "ok") << ok.detail;
  EXPECT_NE(ok.detail.find("derived for this model from its predicted cost: mean KL 0.004, top-1 kept 98.0%"),
            std::string::npos)
      << ok.detail;
  for (int i = 0; i < 3; ++i) {
    Clean d = c;
    if (i == 0) d.r.kl_bound = kld_gate_defaults(QuantType::Q8_0).max_mean_kl;
    if (i == 1) d.r.min_top1 = kld_gate_defaults(QuantType::Q8_0).min_top1;
    if (i == 2) d.r.predicted_mean_kl = 1e-2;  // a prediction that derives another bound
    EXPECT_EQ(audit_kld_gate(d.r, d.m).result, "FAIL") << i << " " << audit_kld_gate(d.r, d.m).detail;
  }
}

TEST(Audit, EngineRowFailsOnAnotherBackendDtypeIsaOrRunner) {
  Clean c;
  EXPECT_EQ(audit_engine(c.m, c.r).result, "ok");
  for (int i = 0; i < 7; ++i) {
    Clean d;
    if (i == 0) d.r.isa = "avx2";
    if (i == 1) d.r.dtype = "bf16";
    if (i == 2) d.r.backend = "reference";
    if (i == 3) d.r.runner_kind = "oracle";
    if (i == 4) d.m.isa.clear();
    if (i == 5) d.r.lm_head = "q8_0";             // evaluated with a quantized lm_head
    if (i == 6) d.m.quantize_lm_head = "q8_0";    // deployed with one, evaluated without
    EXPECT_EQ(audit_engine(d.m, d.r).result, "FAIL") << i;
  }
  Clean q;  // both quantized alike: ok, and the row says so
  q.m.quantize_lm_head = q.r.lm_head = "q4_0";
  const AuditItem row = audit_engine(q.m, q.r);
  EXPECT_EQ(row.result, "ok");
  EXPECT_NE(row.detail.find("lm_head q4_0"), std::string::npos) << row.detail;
}

TEST(Audit, DispatchRowFiresOnAReferenceKernel) {
  Clean c;
  EXPECT_FALSE(is_reference_dispatch("cpu/avx512:gemv"));
  EXPECT_TRUE(is_reference_dispatch("reference:gemv"));
  EXPECT_TRUE(is_reference_dispatch("reference/scalar:attention"));
  EXPECT_EQ(audit_dispatch(c.r).result, "ok");
  c.r.dispatch_counters["reference:rope"] = 3;
  auto row = audit_dispatch(c.r);
  EXPECT_EQ(row.result, "FAIL");
  EXPECT_NE(row.detail.find("reference:rope x3"), std::string::npos);
  c.r.dispatch_counters.clear();
  EXPECT_EQ(audit_dispatch(c.r).result, "FAIL");
}

TEST(Audit, TunedConfigsRowFailsOnAHeuristicDefaultOrAnotherConfig) {
  Clean c;
  c.sel.chosen = {{"n=64 k=64", {{"mr", 8}, {"fma", 0}, {"gnp", 4}}}};
  // A prefill entry's in_use may carry decode keys from before phase 5: only its own count.
  c.m.kernel_configs["tuned_prefill"] = {
      {{"kernel", "gemm"}, {"shape", {{"n", 64}, {"k", 64}}}, {"in_use", {{"mr", 8}, {"fma", 0}, {"gnp", 2}}}}};
  c.m.kernel_configs["tuned_decode"] = {{{"kernel", "gemv"}, {"shape", {{"n", 64}, {"k", 64}}}, {"in_use", {{"gnp", 4}}}}};
  EXPECT_EQ(audit_tuned_configs(c.m, c.r, c.sel).result, "ok");
  c.sel.heuristic_used = {"gemm n=64 k=64"};
  EXPECT_EQ(audit_tuned_configs(c.m, c.r, c.sel).result, "FAIL");
  Clean d;
  d.r.heuristic_default_configs = true;
  EXPECT_EQ(audit_tuned_configs(d.m, d.r, d.sel).result, "FAIL");
  Clean e;
  e.sel.chosen.clear();
  EXPECT_EQ(audit_tuned_configs(e.m, e.r, e.sel).result, "FAIL");
  // Entries measured on another machine were skipped (their shapes took a heuristic).
  Clean g = c;
  g.sel.heuristic_used.clear();
  g.sel.foreign_skipped = 3;
  g.sel.foreign_machines = {{"GenuineIntel family 6 model 143", 3}};
  auto foreign = audit_tuned_configs(g.m, g.r, g.sel);
  EXPECT_EQ(foreign.result, "FAIL");
  EXPECT_NE(foreign.detail.find("3 entries skipped"), std::string::npos) << foreign.detail;
  // The registry was edited to a config the timing rejected: not what the deployment chose.
  Clean f = c;
  f.sel.heuristic_used.clear();
  f.sel.chosen["n=64 k=64"]["fma"] = 1;
  auto row = audit_tuned_configs(f.m, f.r, f.sel);
  EXPECT_EQ(row.result, "FAIL");
  EXPECT_NE(row.detail.find("where phases 4-5 chose"), std::string::npos) << row.detail;
  // The registry serves nothing for a shape phases 4-5 tuned, or lacks one of its keys.
  Clean n = c;
  n.sel.heuristic_used.clear();
  n.sel.chosen = {{"n=128 k=64", {{"mr", 8}, {"fma", 0}, {"gnp", 4}}}};
  row = audit_tuned_configs(n.m, n.r, n.sel);
  EXPECT_EQ(row.result, "FAIL");
  EXPECT_NE(row.detail.find("tuned_prefill n=64 k=64: the registry serves nothing where phases 4-5 chose"),
            std::string::npos)
      << row.detail;
  Clean k = c;
  k.sel.heuristic_used.clear();
  k.sel.chosen["n=64 k=64"].erase("gnp");
  row = audit_tuned_configs(k.m, k.r, k.sel);
  EXPECT_EQ(row.result, "FAIL");
  EXPECT_NE(row.detail.find("tuned_decode n=64 k=64: the registry serves "), std::string::npos) << row.detail;
}

TEST(Audit, KernelCacheRowFailsOnAHitOrAnUnclearedCache) {
  Clean c;
  c.sel.cache_misses = 14;
  EXPECT_EQ(audit_kernel_cache(true, c.sel).result, "ok");
  EXPECT_EQ(audit_kernel_cache(false, c.sel).result, "FAIL");
  c.sel.cache_hits = 1;
  EXPECT_EQ(audit_kernel_cache(true, c.sel).result, "FAIL");
}

TEST(Audit, CountsRowFailsOnAnyMissingToken) {
  Clean c;
  c.r.dispatch_counters = {{"cpu/avx512:gemv", 512 * Clean::kPerForward}};
  EXPECT_EQ(audit_counts(c.r, Clean::kPerForward).result, "ok");
  for (int i = 0; i < 4; ++i) {
    Clean d;
    d.r.dispatch_counters = {{"cpu/avx512:gemv", 512 * Clean::kPerForward}};
    if (i == 0) d.r.engine_tokens_generated -= 1;
    if (i == 1) d.r.teacher_forced_steps -= 1;
    if (i == 2) d.r.engine_forward_calls -= 1;
    if (i == 3) d.r.dispatch_counters["cpu/avx512:gemv"] -= 1;
    EXPECT_EQ(audit_counts(d.r, Clean::kPerForward).result, "FAIL") << i;
  }
  // A re-run that did no work matches "what it requires" vacuously: it fails instead.
  Clean z;
  z.r.n_prompts = 0;
  z.r.engine_tokens_generated = z.r.teacher_forced_steps = z.r.engine_forward_calls = 0;
  z.r.dispatch_counters.clear();
  EXPECT_EQ(audit_counts(z.r, Clean::kPerForward).result, "FAIL");
  c.r.dispatch_counters.clear();
  EXPECT_EQ(audit_counts(c.r, 0).result, "FAIL");  // no kernel call per forward counted
}

TEST(Audit, FaultRowFailsOnAPlantedFaultInTheDeployOrTheRerun) {
  Clean c;
  EXPECT_EQ(audit_fault(c.m, c.r).result, "ok");
  c.m.fault = "logit_scale=1.05";
  EXPECT_EQ(audit_fault(c.m, c.r).result, "FAIL");
  Clean d;
  d.r.fault = "kv_off_by_one";
  EXPECT_EQ(audit_fault(d.m, d.r).result, "FAIL");
}

TEST(Audit, RerunRowFailsWhenTheGateFails) {
  Clean c;
  EXPECT_EQ(audit_rerun(c.r).result, "ok");
  c.r.pass = false;
  c.r.failures = {"mean KL per step 3e-2 exceeds the bound 2e-6"};
  auto row = audit_rerun(c.r);
  EXPECT_EQ(row.result, "FAIL");
  EXPECT_NE(row.detail.find("exceeds the bound"), std::string::npos);
  // A capped re-run (e.g. a non-shipped hf program) caps the evaluation.
  Clean d;
  d.r.caps = {"hf reference program /tmp/x.py is not the shipped tools/hf_reference.py"};
  auto capped = audit_rerun(d.r);
  EXPECT_EQ(capped.result, "warning");
  EXPECT_NE(capped.detail.find("not the shipped"), std::string::npos) << capped.detail;
}

// Phase 7 holds the re-run's engine (tuned configs) to the golden's hidden states: a
// contradicting golden record and a gating departure fail the row; a quantized deployment's
// stand-in (the fp32 oracle) departing warns (caps the verdict), not fails.
TEST(Audit, GoldenLayersRowFailsOnADamagedRecordOrADeparture) {
  verify_detail::GoldenLayers g;
  g.n_sequences = 3;
  const AuditItem clean = audit_golden_layers(g);
  EXPECT_EQ(clean.result, "ok");
  EXPECT_EQ(clean.detail, "the engine's layers of 3 sequences: agree");
  verify_detail::GoldenLayers damaged = g;
  damaged.golden_damaged = "g.json: sequence a: hidden states: layer 2 output: ...";
  EXPECT_EQ(audit_golden_layers(damaged).result, "FAIL");
  EXPECT_EQ(audit_golden_layers(damaged).detail, "golden g.json: sequence a: hidden states: layer 2 output: ...");
  verify_detail::GoldenLayers departs = g;
  departs.departs = "sequence a: layer 3: ...";
  EXPECT_EQ(audit_golden_layers(departs).result, "FAIL");
  departs.gating = false;
  EXPECT_EQ(audit_golden_layers(departs).result, "warning");
  EXPECT_NE(audit_golden_layers(departs).detail.find("depart, not gating: sequence a: layer 3"), std::string::npos);
  damaged.gating = false;
  EXPECT_EQ(audit_golden_layers(damaged).result, "FAIL");
}

}  // namespace
}  // namespace llmport::deploy
