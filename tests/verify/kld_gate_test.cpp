// The KLD gate of a quantized engine (issue #15): stories260K in q8_0 and q4_0 against the
// independent golden passes on mean KL and top-1 agreement; each bound fails the run when
// set just below what the run measured; a planted x2 scale on one quantized projection
// fails it; and the gate's options are refused where they mean nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/runner.hpp"
#include "llmport/verify.hpp"
#include "llmport/weights.hpp"
#include "support/test_support.hpp"
#include "verify/format.hpp"
#include "verify/quant_cost.hpp"
#include "verify/verify_support.hpp"

namespace llmport {
namespace {
using test::stories_dir;
using test::stories_golden;
using verify_detail::fmt_g;
namespace fs = std::filesystem;
using test::has_cap;
using test::has_failure;

VerifyOptions quant_options(const std::string& dtype) {
  VerifyOptions o;
  o.reference = "golden:" + stories_golden().string();
  o.engine.backend = "cpu";
  o.engine.threads = 1;
  set_dtype_flag(o.engine, dtype);
  return o;
}

TEST(KldGate, DefaultsAreTheIssuesBounds) {
  EXPECT_EQ(kld_gate_defaults(QuantType::Q8_0).max_mean_kl, 2e-3);
  EXPECT_EQ(kld_gate_defaults(QuantType::Q8_0).min_top1, 0.97);
  EXPECT_EQ(kld_gate_defaults(QuantType::Q4_0).max_mean_kl, 0.15);
  EXPECT_EQ(kld_gate_defaults(QuantType::Q4_0).min_top1, 0.78);
  EXPECT_THROW(kld_gate_defaults(QuantType::None), UsageError);
}

// The bounds widen with the predicted cost and only widen: 2x its mean KL, 3x its top-1
// disagreement, never a top-1 bound below 25%, and a NaN prediction changes nothing.
TEST(KldGate, DerivedBoundsFollowThePredictedCost) {
  const KldGate q8 = kld_gate_defaults(QuantType::Q8_0);
  const KldGate low = derived_kld_gate(q8, 1e-4, 0.999);  // less sensitive than stories260K
  EXPECT_EQ(low.max_mean_kl, 2e-3);
  EXPECT_EQ(low.min_top1, 0.97);
  const KldGate high = derived_kld_gate(q8, 4e-3, 0.98);
  EXPECT_DOUBLE_EQ(high.max_mean_kl, 8e-3);
  EXPECT_DOUBLE_EQ(high.min_top1, 0.94);
  EXPECT_DOUBLE_EQ(derived_kld_gate(kld_gate_defaults(QuantType::Q4_0), 0.8, 0.8).min_top1, 0.4);
  EXPECT_EQ(derived_kld_gate(kld_gate_defaults(QuantType::Q4_0), 0.8, 0.6).min_top1, 0.25);
  const KldGate nan = derived_kld_gate(q8, std::nan(""), std::nan(""));
  EXPECT_EQ(nan.max_mean_kl, 2e-3);
  EXPECT_EQ(nan.min_top1, 0.97);
}

// Honest q8_0 / q4_0 engines of the four synthetic family models failed the gate whose
// bounds were set on stories260K (llama3-tiny q8_0: mean KL 3.9e-3 against 2e-3; their
// random weights with x5 output projections make them 5-10x more sensitive to rounding).
// The bounds derived from each model's predicted cost pass every one. Logits 1.5x too sharp
// still fail: in q8_0 on the mean KL gate itself; in q4_0, whose own cost is larger than
// that (as on stories260K), on the kernel check.
TEST(KldGate, SyntheticModelsPassWithBoundsDerivedFromTheirOwnRoundingCost) {
  for (const char* model : {"llama3-tiny", "mistral-tiny", "qwen2-tiny", "qwen3-tiny"})
    for (const char* dtype : {"q8_0", "q4_0"}) {
      SCOPED_TRACE(std::string(model) + " " + dtype);
      const fs::path dir = test::shared_path(std::string("models/synthetic/") + model);
      VerifyOptions o = quant_options(dtype);
      o.reference = "golden:" + (dir / "golden.json").string();
      const VerifyResult r = run_verify(dir, o);
      EXPECT_TRUE(r.pass) << (r.failures.empty() ? "" : r.failures.front());
      EXPECT_GT(r.predicted_mean_kl, 0.4 * r.mean_kl);
      EXPECT_LT(r.predicted_mean_kl, 2.5 * r.mean_kl);
      const KldGate format = kld_gate_defaults(parse_quant(dtype));
      EXPECT_GE(r.kl_bound, format.max_mean_kl);
      // A pass that needs the widened bounds says so: as close as the format gets on this
      // model, not its usual fidelity (q4_0 costs these models 0.3-1 nat a step).
      const bool needs_kl = r.mean_kl_within_print > format.max_mean_kl;
      const bool needs_top1 = r.top1_agreement < format.min_top1;
      EXPECT_EQ(has_cap(r, "format costs this model more than its default bound: mean KL"), needs_kl) << r.verdict_line();
      EXPECT_EQ(has_cap(r, "format costs this model more than its default bound: top-1"), needs_top1) << r.verdict_line();
      if (std::string(dtype) == "q4_0") {
        EXPECT_EQ(r.verdict(), "PASS-with-warnings") << r.verdict_line();
      }
      o.engine.fault = FaultInjection::parse("logit_scale=1.5");
      const VerifyResult bad = run_verify(dir, o);
      EXPECT_FALSE(bad.pass);
      EXPECT_TRUE(has_failure(bad, std::string(dtype) == "q8_0" ? "mean KL per step" : "quantized kernels"))
          << bad.verdict_line();
    }
}

// The prediction follows the plain computation's own greedy path, not the reference's
// tokens: a golden whose tokens were damaged (top-1 and top-2 swapped at its closest steps
// made llama3-tiny q4_0 predict 0.97 instead of 0.82 and pass) cannot widen the bounds it
// is judged by. And it measures the KL the gate measures: coarsened to the top-5 it is
// never above the full one.
TEST(KldGate, ThePredictionDoesNotFollowTheReferencesTokens) {
  const fs::path dir = test::shared_path("models/synthetic/llama3-tiny");
  const ModelConfig cfg = load_model_config(dir);
  const WeightStore w = WeightStore::open(dir, cfg);
  EngineOptions o;
  o.threads = 1;
  set_dtype_flag(o, "q4_0");
  const Engine engine(cfg, w, o);
  const std::vector<TeacherSequence> honest = {{{1, 5, 9, 200}, {7, 8, 9, 10, 11, 12}}, {{3}, {4, 5, 6}}};
  std::vector<TeacherSequence> damaged = honest;
  for (auto& s : damaged)
    for (int& t : s.tokens) t = (t * 37 + 11) % 1024;
  const QuantCost a = predict_quant_cost(cfg, w, engine, 1, honest, KlKind::Full);
  const QuantCost b = predict_quant_cost(cfg, w, engine, 1, damaged, KlKind::Full);
  EXPECT_GT(a.mean_kl, 0.0);
  EXPECT_EQ(a.mean_kl, b.mean_kl);
  EXPECT_EQ(a.top1_agreement, b.top1_agreement);
  EXPECT_EQ(a.steps, 9);
  const QuantCost c = predict_quant_cost(cfg, w, engine, 1, honest, KlKind::Coarsened);
  EXPECT_LE(c.mean_kl, a.mean_kl);
  EXPECT_GT(c.mean_kl, 0.0);
  EXPECT_EQ(a.mean_kl, std::fmin(a.noise_mean_kl, a.quantizer_mean_kl));
}

// q4_0 costs the synthetic models 0.3-1 nat a step, so the gate's derived bounds (0.4-1.6)
// cannot see a golden re-tempered 1.2x (an audit's: it passed q4_0 on every synthetic
// model). The reference check holds llmport's unquantized computation to the golden with
// the base dtype's own bound, as an unquantized engine is held: it fails the damaged file
// and passes the honest one.
TEST(KldGate, AReTemperedGoldenTheQ4CostHidesFailsTheReferenceCheck) {
  const fs::path dir = test::shared_path("models/synthetic/llama3-tiny");
  nlohmann::json g = nlohmann::json::parse(std::ifstream(dir / "golden.json"));
  for (auto& seq : g["sequences"]) {
    auto& steps = seq["greedy"]["steps_top5"];
    for (std::size_t k = 1; k < steps.size(); ++k) {  // step 0 must match the full last_logits
      auto& st = steps[k];
      std::vector<double> l = st["logits"].get<std::vector<double>>();
      const double lse = st["logsumexp"].get<double>(), l1 = l[0];
      double p5 = 0, total = 0;
      for (double x : l) p5 += std::exp(x - lse);
      for (double& x : l) {
        x = l1 + 1.2 * (x - l1);
        total += std::exp(x - l1);
      }
      total += std::max(1.0 - p5, 1e-9) * 0.8 * std::exp(lse - l1);
      st["logits"] = l;
      st["logsumexp"] = l1 + std::log(total);
    }
  }
  test::TempDir t;
  const fs::path damaged = t.path() / "golden.json";
  std::ofstream(damaged) << g.dump();
  VerifyOptions o = quant_options("q4_0");
  o.reference = "golden:" + (dir / "golden.json").string();
  const VerifyResult honest = run_verify(dir, o);
  EXPECT_TRUE(honest.pass) << (honest.failures.empty() ? "" : honest.failures.front());
  EXPECT_TRUE(honest.reference_check_pass);
  EXPECT_EQ(honest.reference_check_dtype, "fp32");
  EXPECT_EQ(honest.reference_check_bound, kKlBoundFp32);
  EXPECT_LT(honest.reference_check_mean_kl, kKlBoundFp32 / 3);
  o.reference = "golden:" + damaged.string();
  const VerifyResult r = run_verify(dir, o);
  EXPECT_LE(r.mean_kl, r.kl_bound);  // the gate alone passes it
  EXPECT_FALSE(r.reference_check_pass);
  EXPECT_GT(r.reference_check_mean_kl, r.reference_check_bound);
  EXPECT_FALSE(r.pass);
  EXPECT_TRUE(has_failure(r, "the reference disagrees with llmport's fp32 computation"));
  EXPECT_EQ(r.to_json()["gates"]["reference_check"], "FAIL");
}

// Both dtypes pass with the default bounds; then each bound, set just below the measured
// figure, is what fails the same run.
TEST(KldGate, QuantizedStoriesPassesAndEachBoundCanFailIt) {
  for (const char* dtype : {"q8_0", "q4_0"}) {
    SCOPED_TRACE(dtype);
    const VerifyResult r = run_verify(stories_dir(), quant_options(dtype));
    ASSERT_TRUE(r.pass) << (r.failures.empty() ? "" : r.failures.front());
    EXPECT_EQ(r.gate, "kld");
    EXPECT_EQ(r.dtype, dtype);
    // The dtype's bounds, widened by the predicted cost of its rounding here where that is
    // wider (stories260K keeps the KL defaults: 2x its predicted 2.9e-4 / 0.059 is below
    // them); the prediction is the honest run's within 2x (measured 0.77-0.92x).
    const KldGate d = derived_kld_gate(kld_gate_defaults(parse_quant(dtype)), r.predicted_mean_kl, r.predicted_top1);
    EXPECT_EQ(r.kl_bound, d.max_mean_kl);
    EXPECT_EQ(r.min_top1, d.min_top1);
    EXPECT_EQ(r.default_kl_bound, d.max_mean_kl);
    EXPECT_GT(r.predicted_mean_kl, 0.5 * r.mean_kl);
    EXPECT_LT(r.predicted_mean_kl, 2.0 * r.mean_kl);
    EXPECT_EQ(r.to_json()["predicted_cost"]["mean_kl"].get<double>(), r.predicted_mean_kl);
    EXPECT_GT(r.mean_kl, 0.0);  // quantization changes the logits
    EXPECT_LE(r.mean_kl, r.kl_bound);
    EXPECT_GE(r.top1_agreement, r.min_top1);
    EXPECT_TRUE(r.reference_independent);
    // Within the format's own bounds (stories260K is the model they were set on): plain.
    EXPECT_EQ(r.verdict(), "PASS") << r.verdict_line();
    EXPECT_EQ(r.to_json()["gate"], "kld");
    EXPECT_NE(r.to_markdown().find("KLD gate of a quantized engine"), std::string::npos);

    auto tight_kl = quant_options(dtype);
    tight_kl.kl_bound = 0.9 * r.mean_kl;
    const VerifyResult a = run_verify(stories_dir(), tight_kl);
    EXPECT_FALSE(a.pass);
    EXPECT_TRUE(has_failure(a, "mean KL per step")) << a.failures.size();
    EXPECT_EQ(a.mean_kl, r.mean_kl);  // the same run, only the bound moved

    if (r.top1_agreement > 0.0) {
      auto tight_top1 = quant_options(dtype);
      tight_top1.min_top1 = std::min(1.0, r.top1_agreement + 1e-6);
      const VerifyResult b = run_verify(stories_dir(), tight_top1);
      if (r.top1_agreement < 1.0) {
        EXPECT_FALSE(b.pass);
        EXPECT_TRUE(has_failure(b, "top-1 agreement"));
      }
    }
  }
}

// The kernel check (VerifyResult::kernel_mean_kl). A x1.5 or x0.5 error in the block
// scales of one later layer's o_proj hides in q4_0's own KLD on stories260K: against the
// golden the run stays inside the 0.15 / 78% gate (measured mean KL 0.058 and 0.073, top-1
// 89% and 87%; honest 0.054, 89%), so it passed before. The engine's fp32-activation twin
// against llmport's oracle holding the same quantized weights: honest stories260K (fp32)
// 1.3e-12 / 1.5e-12 (q8_0 / q4_0) under the fp32 bound 2e-6; a bf16 checkpoint (qwen2-tiny)
// 4.5e-5 under the bf16 bound 2.5e-3; the faults 1.3e-2 and 3.0e-2, and even a x1.01 error
// in layer 1 (1.3e-5) fails.
TEST(KldGate, AScaleFaultTheQuantizationsOwnKldHidesFailsTheKernelCheck) {
  for (const char* dtype : {"q8_0", "q4_0"}) {
    SCOPED_TRACE(dtype);
    const VerifyResult r = run_verify(stories_dir(), quant_options(dtype));
    ASSERT_TRUE(r.pass) << (r.failures.empty() ? "" : r.failures.front());
    EXPECT_TRUE(r.kernel_pass);
    EXPECT_EQ(r.kernel_base_dtype, "fp32");
    EXPECT_EQ(r.kernel_kl_bound, kKlBoundFp32);
    EXPECT_LT(r.kernel_mean_kl, 1e-9);
    EXPECT_GE(r.kernel_max_kl, r.kernel_mean_kl);
    const auto j = r.to_json();
    EXPECT_EQ(j["gates"]["quantized_kernels"], "PASS");
    EXPECT_EQ(j["kernel_check"]["mean_kl"].get<double>(), r.kernel_mean_kl);
    EXPECT_EQ(j["tolerances"]["kernel_kl_bound"].get<double>(), kKlBoundFp32);
    EXPECT_NE(r.to_markdown().find("| quantized kernels (fp32 activations) vs the fp32 oracle holding the same " +
                                   std::string(dtype) + " weights (not independent) | PASS"),
              std::string::npos);
  }
  // A bf16 checkpoint: the twin computes its unquantized tensors in fp32 like the oracle,
  // so the fp32 bound holds it (honest ~1e-11). With its bf16 base and the bf16 bound a
  // logit scale of 1.05-1.1 passed here (kernel KL 1.1e-3 to 2.2e-3 under 2.5e-3) while
  // the gate, widened by these models' rounding cost, could not see it either.
  for (const char* model : {"qwen2-tiny", "llama3-tiny", "qwen3-tiny"}) {
    SCOPED_TRACE(model);
    VerifyOptions o = quant_options("q8_0");
    const fs::path dir = test::shared_path(std::string("models/synthetic/") + model);
    o.reference = "golden:" + (dir / "golden.json").string();
    const VerifyResult r = run_verify(dir, o);
    EXPECT_EQ(r.kernel_base_dtype, "fp32");
    EXPECT_EQ(r.kernel_kl_bound, kKlBoundFp32);
    EXPECT_TRUE(r.kernel_pass) << r.kernel_mean_kl;
    EXPECT_LT(r.kernel_mean_kl, 1e-3 * kKlBoundFp32);
    o.engine.fault = FaultInjection::parse("logit_scale=1.05");
    const VerifyResult bad = run_verify(dir, o);
    EXPECT_FALSE(bad.pass);
    EXPECT_FALSE(bad.kernel_pass);
  }
  for (const char* fault : {"proj_scale@2=1.5", "proj_scale@4=0.5", "proj_scale@1=1.01"}) {
    SCOPED_TRACE(fault);
    auto o = quant_options("q4_0");
    o.engine.fault = FaultInjection::parse(fault);
    const VerifyResult r = run_verify(stories_dir(), o);
    EXPECT_LE(r.mean_kl, r.kl_bound);  // the KLD gate alone would pass it
    EXPECT_TRUE(r.top1_pass);
    EXPECT_FALSE(r.kernel_pass);
    EXPECT_GT(r.kernel_mean_kl, 5 * r.kernel_kl_bound);
    EXPECT_FALSE(r.pass);
    EXPECT_TRUE(has_failure(r, "quantized kernels: the KL from llmport's fp32 oracle holding the same q4_0 weights"));
    EXPECT_EQ(r.to_json()["gates"]["quantized_kernels"], "FAIL");
  }
}

// A "golden" of the quantized engine's own output passed the KLD gate as independent: only
// the engine's decode path was compared (the audit). Its quantization at every level, on
// the reference backend, and on the prefill path (one `run --dtype q8_0 --prompt-ids
// PREFIX -n 1` per step) are compared now.
TEST(KldGate, AGoldenOfTheQuantizedEnginesOwnOutputIsNotIndependent) {
  test::TempDir t;
  const ModelConfig cfg = load_model_config(stories_dir());
  const WeightStore w = WeightStore::open(stories_dir(), cfg);
  auto forge = [&](const std::string& name, const std::string& backend, bool prefill_path) {
    EngineOptions o;
    o.backend = backend;
    o.threads = 2;
    set_dtype_flag(o, "q8_0");
    EngineRunner runner(cfg, w, o);
    return test::forged_stories_golden(t.path() / (name + ".json"), runner, prefill_path, 2);
  };
  struct Case {
    std::string name, backend;
    bool prefill_path;
    std::string against;
  };
  for (const Case& c : {Case{"cpu_prefill", "cpu", true, "cpu q8_0 engine"}, Case{"reference", "reference", false, "reference q8_0"}}) {
    SCOPED_TRACE(c.name);
    VerifyOptions o = quant_options("q8_0");
    o.reference = "golden:" + forge(c.name, c.backend, c.prefill_path).string();
    const VerifyResult r = run_verify(stories_dir(), o);
    // Not independent, and not of the unquantized model either: the reference check holds
    // it to the fp32 model (it differs by q8_0's own cost, ~2e-4 against 2e-6) and fails it.
    EXPECT_EQ(r.verdict(), "FAIL") << r.verdict_line();
    EXPECT_FALSE(r.reference_check_pass);
    EXPECT_NE(r.independence_finding.find("equal llmport's " + c.against), std::string::npos) << r.independence_finding;
  }
}

// A x2 error in the block scales of one quantized projection (o_proj of layer 0: input
// n_heads x head_dim = 64, a multiple of 32) moves the logits far outside the q8_0 gate.
TEST(KldGate, ADoubledQuantScaleFailsTheGate) {
  auto o = quant_options("q8_0");
  o.engine.fault = FaultInjection::parse("proj_scale@0=2");
  const VerifyResult r = run_verify(stories_dir(), o);
  EXPECT_FALSE(r.pass);
  EXPECT_GT(r.mean_kl, r.kl_bound);
  EXPECT_NE(r.fault, "");
}

// A broken model must not PASS by loosening the gate: bounds looser than the dtype's
// defaults cap the verdict (an honest q4_0 run with --kl-bound 1000 --min-top1 0.01 is
// PASS-with-warnings naming both loosened bounds), and a broken engine (logits x3) fails
// the defaults and, through the kernel check, the loosened bounds too (it was
// PASS-with-warnings before the kernel check).
TEST(KldGate, LoosenedBoundsCapTheVerdict) {
  auto o = quant_options("q4_0");
  o.engine.fault = FaultInjection::parse("logit_scale=3");
  const VerifyResult strict = run_verify(stories_dir(), o);
  EXPECT_FALSE(strict.pass);
  o.kl_bound = 1000;
  o.min_top1 = 0.01;
  const VerifyResult broken_loose = run_verify(stories_dir(), o);
  EXPECT_FALSE(broken_loose.pass);
  EXPECT_TRUE(has_failure(broken_loose, "quantized kernels"));
  o.engine.fault = {};
  const VerifyResult loose = run_verify(stories_dir(), o);
  ASSERT_TRUE(loose.pass) << (loose.failures.empty() ? "" : loose.failures.front());
  EXPECT_EQ(loose.verdict(), "PASS-with-warnings");
  bool kl = false, top1 = false;
  const std::string kl_cap = "bounds loosened by the user: mean KL <= 1e+03, above the q4_0 bound derived for this model " +
                             fmt_g(loose.default_kl_bound);
  const std::string top1_cap = "bounds loosened by the user: top-1 agreement >= 1%, below the q4_0 bound derived for this model " +
                               fmt_g(100.0 * loose.default_min_top1, 4) + "%";
  for (const auto& c : loose.caps) {
    kl = kl || c.find(kl_cap) != std::string::npos;
    top1 = top1 || c.find(top1_cap) != std::string::npos;
  }
  EXPECT_TRUE(kl && top1) << loose.verdict_line();
}

TEST(KldGate, OptionsAreRefusedWhereTheyMeanNothing) {
  auto unquantized = quant_options("fp32");
  unquantized.min_top1 = 0.9;
  EXPECT_THROW(run_verify(stories_dir(), unquantized), UsageError);
  auto bad_share = quant_options("q4_0");
  bad_share.min_top1 = 1.5;
  EXPECT_THROW(run_verify(stories_dir(), bad_share), UsageError);
  auto bad_kl = quant_options("q4_0");
  bad_kl.kl_bound = -1;
  EXPECT_THROW(run_verify(stories_dir(), bad_kl), UsageError);
  // The CLI's error names the flag and the value.
  auto zero = test::run_llmport({"verify", stories_dir().string(), "--dtype", "q8_0", "--kl-bound", "0"});
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
  EXPECT_NE(zero.err.find("--kl-bound must be a finite number > 0, got 0"), std::string::npos) << zero.err;
}

TEST(KldGate, CliSaysWhichGateDecided) {
  const std::string m = stories_dir().string(), ref = "golden:" + stories_golden().string();
  test::TempDir t;
  auto ok = test::run_llmport({"verify", m, "--dtype", "q4_0", "--reference", ref, "--threads", "1", "--report-dir",
                               (t.path() / "r").string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err << ok.out;
  EXPECT_NE(ok.out.find("q4_0 KLD gate: mean KL"), std::string::npos) << ok.out;
  // The token checks only report under the KLD gate: a per-prompt FAIL says so beside the
  // PASS verdict (stories q4_0 has two such prompts on an AVX-512 Zen 4).
  std::istringstream lines(ok.out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("  ", 0) == 0 && line.find("FAIL") != std::string::npos) {
      EXPECT_NE(line.find("FAIL (reported, not gating)"), std::string::npos) << line;
    }
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--dtype", "q4_0", "--min-top1", "1.5"},
        std::vector<std::string>{"--dtype", "bf16", "--min-top1", "0.9"},
        std::vector<std::string>{"--dtype", "bf16", "--quantize-lm-head", "q8_0"},
        std::vector<std::string>{"--dtype", "q8_0", "--quantize-lm-head", "q5_0"}}) {
    std::vector<std::string> args = {"verify", m, "--reference", ref, "--threads", "1"};
    args.insert(args.end(), bad.begin(), bad.end());
    auto r = test::run_llmport(args);
    EXPECT_EQ(r.exit_code, 2) << bad[1] << " " << bad[3] << ": " << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  }
}

}  // namespace
}  // namespace llmport
