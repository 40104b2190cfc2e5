// What a verify verdict may claim (docs/verification.md "What a verdict claims"): each way
// the review fooled the gate (a golden that is llmport's own output under any provenance, a
// golden cut short, an fp32 gate as loose as bf16's, an hf program that is not the shipped
// one, the oracle's bare PASS) now caps or fails the verdict, and the honest shared goldens
// still give a plain PASS. Real files on disk, the real engine, the real binary.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "llmport/architecture.hpp"
#include "llmport/error.hpp"
#include "llmport/kernels.hpp"
#include "llmport/registry.hpp"
#include "llmport/runner.hpp"
#include "llmport/safetensors_writer.hpp"
#include "llmport/verify.hpp"
#include "llmport/weights.hpp"
#include "support/registry_entry.hpp"
#include "verify/verify_support.hpp"

namespace llmport {
namespace {
namespace fs = std::filesystem;
using test::has_cap;
using test::run_llmport;
using test::stories_dir;
using test::stories_golden;
using test::TempDir;
using test::verify_golden;

std::string last_line(const std::string& s) {
  std::string t = s.substr(0, s.find_last_not_of('\n') + 1);
  return t.substr(t.rfind('\n') + 1);
}

// The stories golden re-written as llmport-records/1 with `edit` applied.
fs::path rewritten_golden(const TempDir& t, const std::string& name, const std::function<void(RecordFile&)>& edit) {
  RecordFile rf = read_record_file(stories_golden());
  edit(rf);
  const fs::path out = t.path() / (name + ".json");
  write_record_file(out, rf);
  return out;
}

// forged_stories_golden (verify_support.hpp) under `t` as <name>.json. A forgery is judged
// per sequence, and each verify runs every computation over all of them: cases that need
// one pass n = 2.
fs::path forged_golden(const TempDir& t, const std::string& name, Runner& runner, bool prefill_path = false,
                       std::size_t n = SIZE_MAX) {
  return test::forged_stories_golden(t.path() / (name + ".json"), runner, prefill_path, n);
}

// A step of one compared logit is no evidence of a whole-step copy: an honest fp32 logit
// often equals one of ~10 computations' bit for bit (the audit's top-1 cut of the stories
// golden read "25 of 32 steps ... copied"). Capped for its depth of top entries only.
TEST(VerifyVerdict, AnHonestGoldenCutToItsTop1IsNotCalledACopy) {
  TempDir t;
  const fs::path g = rewritten_golden(t, "top1", [](RecordFile& rf) {
    for (auto& seq : rf.sequences)
      for (auto& st : seq.steps) {
        st.top.resize(1);
        st.logits.clear();
      }
  });
  const auto r = verify_golden(stories_dir(), g, "fp32");
  EXPECT_TRUE(r.pass) << r.verdict_line();
  EXPECT_TRUE(r.reference_independent) << r.independence_finding;
  EXPECT_TRUE(has_cap(r, "holds only 1 top entries")) << r.verdict_line();
  for (const auto& m : r.self_match_steps) EXPECT_EQ(m.identical, 0) << m.sequence;
}

TEST(VerifyVerdict, HonestSharedGoldensArePlainPass) {
  auto r = verify_golden(stories_dir(), stories_golden());
  EXPECT_TRUE(r.pass) << (r.failures.empty() ? "" : r.failures[0]);
  EXPECT_EQ(r.verdict(), "PASS") << r.verdict_line();
  EXPECT_TRUE(r.reference_independent) << r.independence_finding;
  ASSERT_GE(r.self_matches.size(), 2u);  // engine and oracle at least
  for (const auto& m : r.self_matches) {
    EXPECT_GT(m.compared, 0) << m.against;
    EXPECT_LT(m.share(), kSelfMatchShare) << m.against << " " << m.share();
  }
  // An honest step rarely has all its top-5 equal to one computation (measured: no step of
  // any shared golden with gcc; 1 of stories' 32 "dialogue" steps with the clang ASan
  // build), far under the half of a sequence the union needs.
  ASSERT_EQ(r.self_match_steps.size(), r.prompts.size());
  for (const auto& m : r.self_match_steps) EXPECT_LE(m.share(), 0.1) << m.sequence;
  auto models = test::synthetic_models();
  ASSERT_FALSE(models.empty());
  for (const auto& model : models) {
    auto s = verify_golden(model, model / "golden.json");
    EXPECT_EQ(s.verdict(), "PASS") << model << ": " << s.verdict_line();
    for (const auto& m : s.self_matches) EXPECT_LT(m.share(), kSelfMatchShare) << model << " " << m.against;
  }
}

TEST(VerifyVerdict, ProvenanceThatDeniesIndependenceCapsTheVerdict) {
  TempDir t;
  struct Case {
    std::string name, producer;
    bool independent;
    std::string finding;
  };
  for (const Case& c : {Case{"not_independent", "numpy reference", false, "\"independent\": false"},
                        Case{"by_llmport", "llmport 0.1.0 engine (cpu, fp32)", true, "produced by llmport"},
                        Case{"by_LLMPort", "LLMPort oracle", true, "produced by llmport"},
                        Case{"no_producer", "", true, "no provenance"},
                        Case{"blank_producer", "  ", true, "no provenance"}}) {
    SCOPED_TRACE(c.name);
    const fs::path g = rewritten_golden(t, c.name, [&](RecordFile& rf) {
      rf.producer = c.producer;
      rf.independent = c.independent;
    });
    auto r = verify_golden(stories_dir(), g);
    EXPECT_TRUE(r.pass);  // the numbers are the honest golden's: only the claim changes
    EXPECT_EQ(r.verdict(), "PASS-with-warnings");
    EXPECT_FALSE(r.reference_independent);
    EXPECT_TRUE(has_cap(r, "reference not independent")) << r.verdict_line();
    EXPECT_TRUE(has_cap(r, c.finding)) << r.verdict_line();
  }
  // The same golden, re-written with its provenance intact, is still a plain PASS.
  auto ok = verify_golden(stories_dir(), rewritten_golden(t, "intact", [](RecordFile&) {}));
  EXPECT_EQ(ok.verdict(), "PASS") << ok.verdict_line();
}

// Full logits stored in 16 bits hold no more than that precision: rounded to fp16,
// stories260K's own fp32 logits are 1.5e-6 from themselves in full KL, 3/4 of the fp32
// bound (logits of ~30 move it ~4e-5, above it). A side file of fp16 logits claimed fp32
// by the file's word alone (a plain PASS, or a FAIL for its storage); its storage now joins
// its stated precision and sets the bound, and the verdict says it could not check fp32.
TEST(VerifyVerdict, AReferenceStoringItsLogitsIn16BitsIsHeldToTheBoundItsPrecisionSupports) {
  TempDir t;
  const ModelConfig cfg = load_model_config(stories_dir());
  const WeightStore w = WeightStore::open(stories_dir(), cfg);
  auto oracle = make_oracle_runner(cfg, w, 1);  // keeps full logits: a side file
  RecordFile rf = read_record_file(forged_golden(t, "full", *oracle, false, 4));
  for (auto& seq : rf.sequences)
    for (auto& st : seq.steps) {
      ASSERT_FALSE(st.logits.empty());
      for (float& x : st.logits) x = f16_to_f32(f32_to_f16(x));
      for (TopEntry& e : st.top) e.logit = st.logits[static_cast<std::size_t>(e.id)];
      st.logsumexp = log_sum_exp(st.logits);
    }
  rf.producer = "a reference that keeps its logits in fp16";
  const fs::path f32_stored = t.path() / "f32_stored.json", f16_stored = t.path() / "f16_stored.json";
  write_record_file(f32_stored, rf);
  write_record_file(f16_stored, rf);
  // The same values, stored as fp16 (exact: they are fp16 values).
  const fs::path side = t.path() / "f16_stored.safetensors";
  std::vector<TensorData> tensors;
  {
    const SafetensorsFile sf(side);
    for (const auto& [name, v] : sf.tensors()) {
      std::vector<float> x(static_cast<std::size_t>(v.numel()));
      std::memcpy(x.data(), v.data, x.size() * sizeof(float));
      const bool logits = name.ends_with(".logits");
      tensors.push_back(make_tensor(name, logits ? DType::F16 : DType::F32, v.shape, x));
    }
  }
  write_safetensors(side, tensors);
  EXPECT_EQ(read_record_file(f16_stored).compute_dtype, "float32; fp16 (side-file logits)");

  const VerifyResult as_fp32 = verify_golden(stories_dir(), f32_stored, "fp32");
  EXPECT_EQ(as_fp32.kl_bound, kl_bound_for(DType::F32, ""));
  EXPECT_GT(as_fp32.mean_kl, 0.25 * as_fp32.kl_bound) << "fp16 rounding is a sizeable share of the fp32 bound";
  const VerifyResult as_fp16 = verify_golden(stories_dir(), f16_stored, "fp32");
  EXPECT_TRUE(as_fp16.pass) << as_fp16.verdict_line() << " " << (as_fp16.failures.empty() ? "" : as_fp16.failures[0]);
  EXPECT_EQ(as_fp16.kl_bound, kl_bound_for(DType::BF16, ""));
  EXPECT_NEAR(as_fp16.mean_kl, as_fp32.mean_kl, 1e-3 * as_fp32.mean_kl);  // the same values
  EXPECT_TRUE(has_cap(as_fp16, "the reference computed in float32; fp16 (side-file logits): it cannot check an fp32 "
                               "engine at fp32 precision"))
      << as_fp16.verdict_line();
}

TEST(VerifyVerdict, LlmportOutputPassedOffAsIndependentIsCaughtByItsContent) {
  TempDir t;
  const ModelConfig cfg = load_model_config(stories_dir());
  const WeightStore w = WeightStore::open(stories_dir(), cfg);
  EngineOptions eo;
  eo.backend = "cpu";
  eo.threads = 1;
  EngineRunner engine(cfg, w, eo);
  auto oracle = make_oracle_runner(cfg, w, 1);
  struct Case {
    std::string name;
    Runner* runner;
    std::string against;
  };
  for (const Case& c : {Case{"engine", &engine, "engine"}, Case{"oracle", oracle.get(), "oracle"}}) {
    SCOPED_TRACE(c.name);
    auto r = verify_golden(stories_dir(), forged_golden(t, c.name, *c.runner));
    EXPECT_TRUE(r.pass);
    EXPECT_EQ(r.verdict(), "PASS-with-warnings");
    EXPECT_TRUE(has_cap(r, ": 100% of")) << r.verdict_line();
    EXPECT_TRUE(has_cap(r, "llmport's " + c.against + " output bit for bit")) << r.verdict_line();
  }
  // Another dtype's engine output: a bf16 engine against an fp32 cpu-engine forgery, an
  // fp32 engine against a bf16 one (the forger states bf16 to get the bf16 bound).
  for (auto [forged_dtype, engine_dtype] : {std::pair{DType::F32, "bf16"}, std::pair{DType::BF16, "fp32"},
                                            std::pair{DType::F16, "bf16"}}) {
    EngineOptions other = eo;
    other.dtype = forged_dtype;
    EngineRunner forger(cfg, w, other);
    const std::string name(dtype_name(forged_dtype));
    auto r = verify_golden(stories_dir(), forged_golden(t, "dtype_" + name, forger), engine_dtype);
    EXPECT_TRUE(has_cap(r, "llmport's cpu " + name + " engine output bit for bit")) << name << ": " << r.verdict_line();
  }
  // The prefill path's output (one `llmport run --prompt-ids PREFIX -n 1` per step) sums in
  // other orders than decode: a plain PASS until each side's prefill path was compared. The
  // forger runs 2 threads, verify 1: the engine's bits do not depend on the count
  // (EngineThreads), where a prefill's attention work items once did.
  for (DType dt : {DType::F32, DType::BF16}) {
    EngineOptions other = eo;
    other.dtype = dt;
    other.threads = 2;
    EngineRunner forger(cfg, w, other);
    const std::string name(dtype_name(dt));
    auto r = verify_golden(stories_dir(), forged_golden(t, "prefill_" + name, forger, true, 2), name);
    // bf16 output labelled an fp32 reference is also not fp32-precise: the reference check
    // (llmport's fp32 computation at the fp32 bound) fails it.
    EXPECT_EQ(r.verdict(), dt == DType::F32 ? "PASS-with-warnings" : "FAIL") << name;
    EXPECT_EQ(r.reference_check_pass, dt == DType::F32) << name;
    EXPECT_TRUE(has_cap(r, "content: sequence")) << name << ": " << r.verdict_line();
    // The finding names the first side past the share (in bf16 the decode path shares most
    // of stories260K's bits); the prefill path's side matches every logit of every sequence.
    int rows = 0;
    for (const auto& m : r.self_matches)
      if (m.against == "cpu " + name + " engine (prefill path)") {
        ++rows;
        EXPECT_EQ(m.share(), 1.0) << name << " " << m.sequence;
      }
    EXPECT_EQ(rows, static_cast<int>(r.prompts.size())) << name;
  }
  // Each step from another computation (oracle, engine, its prefill path, another level:
  // the audit's mix), none reaching half of a sequence alone: the union of whole-copied
  // steps sees it.
  {
    std::vector<RecordFile> sources;
    sources.push_back(read_record_file(forged_golden(t, "mix_oracle", *oracle)));
    sources.push_back(read_record_file(forged_golden(t, "mix_engine", engine)));
    sources.push_back(read_record_file(forged_golden(t, "mix_prefill", engine, true)));
    EngineOptions other = eo;
    other.dtype = DType::F16;
    EngineRunner f16(cfg, w, other);
    sources.push_back(read_record_file(forged_golden(t, "mix_f16", f16)));
    RecordFile mix = sources.front();
    mix.sequences.resize(2);
    for (std::size_t i = 0; i < mix.sequences.size(); ++i)
      for (std::size_t k = 0; k < mix.sequences[i].steps.size(); ++k) {
        const StepRecord& from = sources[k % sources.size()].sequences[i].steps[k];
        ASSERT_EQ(from.token, mix.sequences[i].steps[k].token) << "the sources agree on every greedy token";
        mix.sequences[i].steps[k] = from;
      }
    write_record_file(t.path() / "mix.json", mix);
    auto r = verify_golden(stories_dir(), t.path() / "mix.json");
    EXPECT_EQ(r.verdict(), "PASS-with-warnings") << r.verdict_line();
    EXPECT_TRUE(has_cap(r, " steps have every compared logit equal to one of llmport's computations'"))
        << r.verdict_line();
    for (const auto& m : r.self_matches) EXPECT_LT(m.share(), 1.0) << m.against << " " << m.sequence;
  }
  {
    EngineOptions other = eo;
    other.threads = 2;
    EngineRunner forger(cfg, w, other);
    auto r = verify_golden(stories_dir(), forged_golden(t, "threads_2", forger, false, 2));
    EXPECT_TRUE(has_cap(r, ": 100% of")) << r.verdict_line();
    EXPECT_TRUE(has_cap(r, "llmport's engine output bit for bit")) << r.verdict_line();
  }
  // Another ISA level's output (what `LLMPORT_CPU_ISA=avx2 llmport run --json` writes): it
  // differs from the best level's in the last bits, so only that level's own side sees it.
  const std::vector<std::string> levels = backend_levels("cpu");
  for (std::size_t i = 1; i < levels.size(); ++i) {
    EngineOptions other = eo;
    other.backend_level = levels[i];
    EngineRunner forger(cfg, w, other);
    auto r = verify_golden(stories_dir(), forged_golden(t, "isa_" + levels[i], forger));
    EXPECT_EQ(r.verdict(), "PASS-with-warnings") << levels[i];
    // Named by its own side, or by the engine's where the two levels share the fp32 kernels.
    EXPECT_TRUE(has_cap(r, "llmport's cpu fp32 engine (" + levels[i] + ") output bit for bit") ||
                has_cap(r, "llmport's engine output bit for bit"))
        << levels[i] << ": " << r.verdict_line();
  }
  // A partial copy: five honest sequences and three of llmport's own. Each sequence is
  // judged on its own, so the copies are caught though they are under half of the file.
  const RecordFile honest = read_record_file(stories_golden());
  const RecordFile forged = read_record_file(forged_golden(t, "whole", engine));
  RecordFile mixed = honest;
  for (std::size_t i = 5; i < 8; ++i) mixed.sequences[i].steps = forged.sequences[i].steps;
  for (auto& s : mixed.sequences) s.hidden = {};
  write_record_file(t.path() / "mixed.json", mixed);
  auto mr = verify_golden(stories_dir(), t.path() / "mixed.json");
  EXPECT_TRUE(has_cap(mr, "content: sequence " + honest.sequences[5].name + ": 100% of")) << mr.verdict_line();
  // A copy inside each sequence: the first 4 steps honest, the rest the oracle's (or the
  // engine's at another dtype or ISA level). The sides were compared on the first 4 steps
  // only, so this was a plain PASS; every step is compared now.
  std::vector<std::pair<std::string, std::unique_ptr<Runner>>> forgers;
  forgers.emplace_back("oracle", make_oracle_runner(cfg, w, 1));
  {
    EngineOptions o = eo;
    o.dtype = DType::F16;
    forgers.emplace_back("cpu fp16 engine", std::make_unique<EngineRunner>(cfg, w, o));
  }
  if (levels.size() > 1) {
    EngineOptions o = eo;
    o.backend_level = levels.back();
    forgers.emplace_back("cpu fp32 engine (" + levels.back() + ")", std::make_unique<EngineRunner>(cfg, w, o));
  }
  for (auto& [name, forger] : forgers) {
    const RecordFile copy = read_record_file(forged_golden(t, "tail_" + std::to_string(forgers.size()), *forger));
    RecordFile tail = honest;
    for (std::size_t i = 0; i < tail.sequences.size(); ++i) {
      auto& steps = tail.sequences[i].steps;
      ASSERT_EQ(steps.size(), copy.sequences[i].steps.size());
      for (std::size_t k = 0; k < steps.size(); ++k) ASSERT_EQ(steps[k].token, copy.sequences[i].steps[k].token) << name;
      std::copy(copy.sequences[i].steps.begin() + 4, copy.sequences[i].steps.end(), steps.begin() + 4);
      tail.sequences[i].hidden = {};
      for (auto& st : steps) st.logits.clear();
    }
    write_record_file(t.path() / "tail.json", tail);
    auto tr = verify_golden(stories_dir(), t.path() / "tail.json");
    EXPECT_EQ(tr.verdict(), "PASS-with-warnings") << name << ": " << tr.verdict_line();
    EXPECT_TRUE(has_cap(tr, "content: sequence")) << name << ": " << tr.verdict_line();
    // Named by that side or, where two sides compute the same bits, by an earlier one.
    EXPECT_TRUE(has_cap(tr, "llmport's " + name + " output bit for bit") || name != "oracle")
        << name << ": " << tr.verdict_line();
    fs::remove(t.path() / "tail.json");
  }
  // Junk full logits beside copied top-5 lists cannot dilute the count: a step's full logits
  // must hold its top list's values, so the file is refused (exit 2), naming the step.
  RecordFile diluted = forged;
  for (auto& s : diluted.sequences) s.steps[0].logits.assign(static_cast<std::size_t>(cfg.vocab_size), 0.0f);
  write_record_file(t.path() / "diluted.json", diluted);
  try {
    verify_golden(stories_dir(), t.path() / "diluted.json");
    ADD_FAILURE() << "junk full logits were accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("seq0.logits[0] against sequences[0].steps[0]: top entry "), std::string::npos)
        << e.what();
  }
}

// A registry's tuned tile configs may change the engine's bits (the bf16 GEMM on fp32 FMAs
// or vdpbf16ps; the other keys only block the same sums), so on tuned configs the engine's
// own teacher-forced run no longer stands for its level's default-config output (a plain
// `llmport run`): that side is compared too. On default configs it is the engine itself.
TEST(VerifyVerdict, AnEngineOnTunedConfigsStillComparesItsLevelsDefaultOutput) {
  TempDir t;
  const ModelConfig cfg = load_model_config(stories_dir());
  const WeightStore w = WeightStore::open(stories_dir(), cfg);
  auto be = make_backend("cpu", 1);
  {
    // Every linear's prefill GEMM measured "here" on the other bf16 path.
    KernelRegistry reg(t.path() / "none", t.path() / "reg");
    using R = TensorRole;
    for (R role : {R::Wq, R::Wk, R::Wv, R::Wo, R::WGate, R::WUp, R::WDown, R::LmHead}) {
      const TensorView& tv = w.get(role, role == R::LmHead ? -1 : 0);
      const KernelShape shape{{"m", 512}, {"n", static_cast<int>(tv.shape[0])}, {"k", static_cast<int>(tv.shape[1])}};
      TileConfig best = be->default_tiles(OpDesc{OpKind::Gemm, DType::BF16, shape});
      best["fma"] = best.count("fma") ? 1 - best["fma"] : 0;
      // The register-limit tile of the path it now names (a tile past it is refused).
      best["mr"] = best["fma"] == 1 ? 13 : 12;
      best["np"] = 2;
      reg.record(test::measured_entry("gemm", "bf16", be->isa(), shape, best, 1, "tuned", 1));
    }
    reg.save();
  }
  for (bool tuned : {false, true}) {
    SCOPED_TRACE(tuned ? "tuned" : "default configs");
    VerifyOptions o;
    o.reference = "golden:" + stories_golden().string();
    o.engine.backend = "cpu";
    o.engine.threads = 1;
    o.engine.dtype = DType::BF16;
    if (tuned) {
      o.engine.kernels = std::make_shared<KernelSelection>();
      o.engine.kernels->registry = std::make_shared<KernelRegistry>(t.path() / "none", t.path() / "reg");
    }
    const VerifyResult r = run_verify(stories_dir(), o);
    EXPECT_EQ(r.verdict(), "PASS") << r.verdict_line();
    EXPECT_EQ(tuned, o.engine.kernels && !o.engine.kernels->registry_used.empty());
    int twin = 0;
    for (const auto& m : r.self_matches) twin += m.against == "cpu bf16 engine";
    EXPECT_EQ(twin, tuned ? static_cast<int>(r.prompts.size()) : 0);
  }
}

// Softmax, so every KL gate, is blind to one constant added to a step's logits: llmport's
// own output shifted (or turned into log-probs) gave a plain PASS, as no logit was equal bit
// for bit any more. The honest golden shifted the same ways stays a plain PASS: an
// independent computation's own rounding does not survive as one constant.
TEST(VerifyVerdict, LlmportsOutputShiftedByAConstantIsStillACopy) {
  TempDir t;
  const ModelConfig cfg = load_model_config(stories_dir());
  const WeightStore w = WeightStore::open(stories_dir(), cfg);
  EngineOptions eo;
  eo.backend = "cpu";
  eo.threads = 1;
  EngineRunner engine(cfg, w, eo);
  const RecordFile forged = read_record_file(forged_golden(t, "forged", engine));
  const RecordFile honest = read_record_file(stories_golden());
  auto shifted = [&](const RecordFile& from, const std::string& name, const std::function<double(const StepRecord&)>& by) {
    RecordFile rf = from;
    for (auto& seq : rf.sequences) {
      seq.hidden = {};
      for (auto& st : seq.steps) {
        const double c = by(st);
        for (auto& e : st.top) e.logit = static_cast<float>(e.logit + c);
        for (auto& x : st.logits) x = static_cast<float>(x + c);
        if (st.logsumexp) *st.logsumexp += c;
      }
    }
    write_record_file(t.path() / (name + ".json"), rf);
    return verify_golden(stories_dir(), t.path() / (name + ".json"));
  };
  const std::function<double(const StepRecord&)> plus_one = [](const StepRecord&) { return 1.0; };
  const std::function<double(const StepRecord&)> minus = [](const StepRecord&) { return -3.7; };
  const std::function<double(const StepRecord&)> log_probs = [](const StepRecord& st) {
    return st.logsumexp ? -*st.logsumexp : -static_cast<double>(st.top[0].logit);
  };
  for (const auto& [name, by] : {std::pair{"plus_one", plus_one}, {"minus", minus}, {"log_probs", log_probs}}) {
    SCOPED_TRACE(name);
    const auto r = shifted(forged, std::string("forged_") + name, by);
    EXPECT_TRUE(r.pass);
    EXPECT_TRUE(has_cap(r, "llmport's engine output bit for bit or shifted by a constant")) << r.verdict_line();
    const auto h = shifted(honest, std::string("honest_") + name, by);
    EXPECT_EQ(h.verdict(), "PASS") << h.verdict_line();
  }
}

TEST(VerifyVerdict, TopListsThatNoTopKMadeAreRejectedAndShortOnesCap) {
  TempDir t;
  // A padded list that repeats an id, and one out of order: malformed (exit 2 material).
  RecordFile rf = read_record_file(stories_golden());
  for (auto& s : rf.sequences) s.hidden = {};
  RecordFile padded = rf;
  padded.sequences[0].steps[3].top.push_back(padded.sequences[0].steps[3].top[1]);
  write_record_file(t.path() / "padded.json", padded);
  EXPECT_THROW(read_record_file(t.path() / "padded.json"), ConfigError);
  RecordFile unsorted = rf;
  std::swap(unsorted.sequences[1].steps[0].top[0], unsorted.sequences[1].steps[0].top[2]);
  write_record_file(t.path() / "unsorted.json", unsorted);
  try {
    read_record_file(t.path() / "unsorted.json");
    ADD_FAILURE() << "an out-of-order top list was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not sorted"), std::string::npos) << e.what();
  }
  // Top-1 only: the top-5 checks would shrink to nothing; the verdict is capped.
  const fs::path top1 = rewritten_golden(t, "top1", [](RecordFile& f) {
    for (auto& s : f.sequences)
      for (auto& st : s.steps) st.top.resize(1);
  });
  auto r = verify_golden(stories_dir(), top1);
  EXPECT_TRUE(has_cap(r, "holds only 1 top entries per step, fewer than the top-5")) << r.verdict_line();
}

TEST(VerifyVerdict, TokenizationIsCheckedTheWayTheFileSaysItRendered) {
  TempDir t;
  for (const char* rendering : {"ids", "chat_template"}) {
    SCOPED_TRACE(rendering);
    const fs::path g = rewritten_golden(t, std::string("render_") + rendering, [&](RecordFile& f) {
      for (auto& s : f.sequences) s.prompt_rendering = rendering;
      f.sequences[2].prompt = "a text these ids are not";
    });
    auto r = verify_golden(stories_dir(), g);
    EXPECT_FALSE(r.pass) << r.verdict_line();
    EXPECT_NE(r.failures.front().find("tokenization differs"), std::string::npos) << r.failures.front();
  }
}

TEST(VerifyVerdict, AShallowReferenceIsCappedWithItsCountsNamed) {
  TempDir t;
  const fs::path one_step = rewritten_golden(t, "one_step", [](RecordFile& rf) {
    rf.n_steps = 1;
    for (auto& s : rf.sequences) s.steps.resize(1);
  });
  auto r = verify_golden(stories_dir(), one_step);
  EXPECT_TRUE(r.pass);
  EXPECT_EQ(r.n_steps, 1);
  EXPECT_TRUE(has_cap(r, "depth: 8 prompts x 1 steps, fewer than the required 4 x 24")) << r.verdict_line();
  const fs::path three = rewritten_golden(t, "three", [](RecordFile& rf) { rf.sequences.resize(3); });
  auto r3 = verify_golden(stories_dir(), three);
  EXPECT_TRUE(has_cap(r3, "depth: 3 prompts x 32 steps")) << r3.verdict_line();
  // Four copies of one sequence are one prompt deep.
  const fs::path repeated = rewritten_golden(t, "repeated", [](RecordFile& rf) {
    rf.sequences.resize(1);
    for (int i = 1; i < 4; ++i) {
      rf.sequences.push_back(rf.sequences[0]);
      rf.sequences.back().name += std::to_string(i);
    }
  });
  auto rr = verify_golden(stories_dir(), repeated);
  EXPECT_TRUE(rr.pass);
  EXPECT_TRUE(has_cap(rr, "depth: 1 prompts x 32 steps, fewer than the required 4 x 24 (3 repeated prompts)"))
      << rr.verdict_line();
  // 4 x 24 is enough.
  const fs::path min = rewritten_golden(t, "min", [](RecordFile& rf) {
    rf.sequences.resize(4);
    rf.n_steps = 24;
    for (auto& s : rf.sequences) s.steps.resize(24);
  });
  EXPECT_EQ(verify_golden(stories_dir(), min).verdict(), "PASS");
}

TEST(VerifyVerdict, Fp32BoundCatchesFaultsTheBf16BoundMisses) {
  EXPECT_EQ(kl_bound_for(DType::F32, "float32"), kKlBoundFp32);
  EXPECT_EQ(kl_bound_for(DType::F32, ""), kKlBoundFp32);
  EXPECT_EQ(kl_bound_for(DType::F32, "bfloat16"), kKlBoundBf16);
  EXPECT_EQ(kl_bound_for(DType::BF16, "float32"), kKlBoundBf16);
  EXPECT_EQ(kl_bound_for(DType::F16, "float32"), kKlBoundBf16);
  for (const char* fault : {"wrong_rope_theta@2=1.1", "logit_scale=1.05"}) {
    SCOPED_TRACE(fault);
    auto r = verify_golden(stories_dir(), stories_golden(), "fp32", fault);
    EXPECT_EQ(r.kl_bound, kKlBoundFp32);
    EXPECT_FALSE(r.pass);
    EXPECT_GT(r.mean_kl, kKlBoundFp32);
    EXPECT_LT(r.mean_kl, kKlBoundBf16);  // the old, dtype-blind bound let it through
    EXPECT_EQ(r.verdict(), "FAIL");
  }
  auto honest = verify_golden(stories_dir(), stories_golden(), "fp32");
  EXPECT_TRUE(honest.pass);
  EXPECT_LT(honest.mean_kl, kKlBoundFp32 / 3);
  // A reference that states a lower precision gets the bf16 bound, but cannot give an fp32
  // deployment a plain PASS: claiming bf16 does not buy a loose gate.
  TempDir t;
  const fs::path claims_bf16 = rewritten_golden(t, "bf16", [](RecordFile& rf) { rf.compute_dtype = "bfloat16"; });
  auto loose = verify_golden(stories_dir(), claims_bf16, "fp32", "wrong_rope_theta@2=1.1");
  EXPECT_EQ(loose.kl_bound, kKlBoundBf16);
  EXPECT_EQ(loose.verdict(), "PASS-with-warnings") << loose.verdict_line();
  EXPECT_TRUE(has_cap(loose, "cannot check an fp32 engine at fp32 precision")) << loose.verdict_line();
}

// The bf16 gate (2.5e-3) is wider than an fp32 golden's precision: the stories golden with
// top-1 and top-2 swapped at the last step of 3 of its 8 sequences measured 1.4e-3 and
// passed a bf16 verify (fp32 and q8_0 failed it). The reference check holds llmport's fp32
// computation to the golden at the fp32 bound.
TEST(VerifyVerdict, ATopSwapTheBf16BoundHidesFailsTheReferenceCheck) {
  TempDir t;
  const fs::path swapped = rewritten_golden(t, "swapped", [](RecordFile& rf) {
    // The 3 sequences whose last step is the closest call (gaps of 0.39-0.74 logits).
    std::vector<std::pair<float, std::size_t>> gaps;
    for (std::size_t i = 0; i < rf.sequences.size(); ++i) {
      const auto& top = rf.sequences[i].steps.back().top;
      gaps.emplace_back(top.at(0).logit - top.at(1).logit, i);
    }
    std::sort(gaps.begin(), gaps.end());
    for (std::size_t j = 0; j < 3; ++j) {
      StepRecord& last = rf.sequences.at(gaps[j].second).steps.back();
      std::swap(last.top.at(0).id, last.top.at(1).id);
      last.token = last.top[0].id;
    }
  });
  const auto r = verify_golden(stories_dir(), swapped, "bf16");
  EXPECT_LE(r.mean_kl, r.kl_bound);  // the bf16 gate alone passes it
  EXPECT_TRUE(r.reference_checked);
  EXPECT_EQ(r.reference_check_bound, kKlBoundFp32);
  EXPECT_FALSE(r.reference_check_pass);
  EXPECT_EQ(r.verdict(), "FAIL");
  ASSERT_FALSE(r.failures.empty());
  EXPECT_NE(r.failures.back().find("the reference disagrees with llmport's fp32 computation (not independent)"),
            std::string::npos)
      << r.failures.back();
  EXPECT_EQ(r.to_json()["gates"]["reference_check"], "FAIL");
  // The honest golden: a plain PASS, the check at what an fp32 verify measures.
  const auto honest = verify_golden(stories_dir(), stories_golden(), "bf16");
  EXPECT_EQ(honest.verdict(), "PASS") << honest.verdict_line();
  EXPECT_TRUE(honest.reference_check_pass);
  EXPECT_LT(honest.reference_check_mean_kl, kKlBoundFp32 / 3);
  // An fp32 engine is its own fp32 check; the oracle is no outside reference.
  EXPECT_FALSE(verify_golden(stories_dir(), stories_golden(), "fp32").reference_checked);
  VerifyOptions o;
  o.engine.threads = 1;
  set_dtype_flag(o.engine, "bf16");
  o.quick = true;
  EXPECT_FALSE(run_verify(stories_dir(), o).reference_checked);
}

TEST(VerifyVerdict, RunParametersAreRecordedAsGiven) {
  VerifyOptions o;
  o.reference = "golden:" + stories_golden().string();
  o.engine.threads = 1;
  o.top_k = 3;
  o.kl_bound = 0.5;
  TempDir t;
  o.report_dir = t.path() / "rep";
  auto r = run_verify(stories_dir(), o);
  EXPECT_EQ(r.top_k, 3);
  EXPECT_EQ(r.kl_bound, 0.5);
  std::ifstream f(t.path() / "rep" / "report.json");
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["tolerances"]["top_k"], 3);
  EXPECT_EQ(j["tolerances"]["kl_bound"], 0.5);
  // Looser than the defaults (top-5, the fp32 bound): what the run proved is less than the
  // gate's, so the verdict is capped and says why.
  EXPECT_EQ(j["verdict"], "PASS-with-warnings");
  EXPECT_TRUE(has_cap(r, "bounds loosened by the user: top-3 token sets")) << r.verdict_line();
  EXPECT_TRUE(has_cap(r, "bounds loosened by the user: mean KL <= 0.5, above the fp32 default")) << r.verdict_line();
  // Tighter bounds prove more: no cap.
  VerifyOptions tight = o;
  tight.top_k = kTopK;
  tight.kl_bound = kKlBoundFp32 / 2;
  tight.report_dir = t.path() / "tight";
  const auto tr = run_verify(stories_dir(), tight);
  for (const auto& c : tr.caps) EXPECT_EQ(c.find("loosened"), std::string::npos) << c;
}

TEST(VerifyVerdict, OracleVerifySaysWhatItProved) {
  TempDir t;
  auto r = run_llmport({"verify", stories_dir().string(), "--threads", "1", "--report-dir", (t.path() / "a").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out), "PASS-with-warnings (reference not independent: oracle)") << r.out;
  auto j = nlohmann::json::parse(test::read_file(t.path() / "a" / "report.json"));
  EXPECT_EQ(j["verdict"], "PASS-with-warnings");
  EXPECT_EQ(j["counts"]["prompts"], kDefaultPrompts);
  auto q = run_llmport(
      {"verify", stories_dir().string(), "--threads", "1", "--quick", "--report-dir", (t.path() / "b").string()});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(last_line(q.out),
            "PASS-with-warnings (reference not independent: oracle; depth: 2 prompts x 32 steps, fewer than the "
            "required 8 x 32)")
      << q.out;
  auto g = run_llmport({"verify", stories_dir().string(), "--threads", "1", "--reference",
                        "golden:" + stories_golden().string(), "--report-dir", (t.path() / "c").string()});
  EXPECT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(last_line(g.out), "PASS");
  auto help = run_llmport({"verify", "--help"});
  EXPECT_NE(help.out.find("oracle       llmport's own fp32 reference kernels: NOT independent"), std::string::npos)
      << help.out;
}

// --reference hf with a program other than the shipped tools/hf_reference.py: the report
// names the program and its sha256, and the verdict is capped. The program here replays the
// honest stories golden (so the gate itself passes), as a doctored script could.
TEST(VerifyVerdict, HfReferenceFromAnotherProgramIsNamedAndCapped) {
  TempDir t;
  const fs::path records = rewritten_golden(t, "replay", [](RecordFile& rf) {
    rf.producer = "tools/hf_reference.py (transformers AutoModelForCausalLM, float32)";
    rf.versions = {{"python", "3.11.2"}, {"torch", "2.5.0"}, {"transformers", "4.46.0"}};
    for (auto& s : rf.sequences) {  // no side file: the program copies one file
      s.hidden = {};
      for (auto& st : s.steps) st.logits.clear();
    }
  });
  // A python stand-in: the torch/transformers probe succeeds, the script runs under sh.
  const fs::path py = t.path() / "python";
  test::write_file(py, "#!/bin/sh\nif [ \"$1\" = -c ]; then exit 0; fi\nexec sh \"$@\"\n");
  const fs::path prog = t.path() / "hf_reference.py";
  test::write_file(prog, "while [ $# -gt 0 ]; do if [ \"$1\" = --out ]; then out=$2; fi; shift; done\ncp '" +
                             records.string() + "' \"$out\"\n");
  ::chmod(py.c_str(), 0755);
  ::setenv("LLMPORT_HF_REFERENCE", prog.c_str(), 1);
  VerifyOptions o;
  o.reference = "hf";
  o.python = py.string();
  o.engine.threads = 1;
  o.report_dir = t.path() / "rep";
  auto r = run_verify(stories_dir(), o);
  ::unsetenv("LLMPORT_HF_REFERENCE");
  EXPECT_TRUE(r.pass) << (r.failures.empty() ? "" : r.failures[0]);
  EXPECT_EQ(r.reference_program.value("program", ""), fs::absolute(prog).lexically_normal().string());
  EXPECT_EQ(r.reference_program.value("sha256", "").size(), 64u);
  EXPECT_FALSE(r.reference_program.value("shipped", true));
  EXPECT_EQ(r.reference_program["versions"]["transformers"], "4.46.0");
  EXPECT_TRUE(has_cap(r, "is not the shipped tools/hf_reference.py")) << r.verdict_line();
  auto j = nlohmann::json::parse(test::read_file(t.path() / "rep" / "report.json"));
  EXPECT_EQ(j["reference"]["program"]["sha256"], r.reference_program["sha256"]);
}

}  // namespace
}  // namespace llmport

namespace llmport {
namespace {

// One name for the test-only fault everywhere, and every report it touches records it.
TEST(VerifyVerdict, PlantedFaultHasOneNameAndIsRecordedInEveryReport) {
  TempDir t;
  const std::string model = stories_dir().string();
  for (const std::string cmd : {"run", "verify", "diagnosis", "deploy"}) {
    auto old = run_llmport({cmd, model, "--fault", "logit_scale=1.05"});
    EXPECT_EQ(old.exit_code, 2) << cmd << ": " << old.err;
  }
  auto run = run_llmport({"run", model, "--prompt", "Once", "-n", "2", "--json", "--inject-fault", "logit_scale=1.05"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["planted_fault"], "logit_scale=1.05");
  auto ver = run_llmport({"verify", model, "--quick", "--threads", "1", "--report-dir", (t.path() / "v").string(),
                          "--inject-fault", "logit_scale=1.05"});
  EXPECT_EQ(nlohmann::json::parse(test::read_file(t.path() / "v" / "report.json"))["planted_fault"], "logit_scale=1.05");
  EXPECT_NE(test::read_file(t.path() / "v" / "report.md").find("planted fault"), std::string::npos);
  auto dia = run_llmport({"diagnosis", model, "--prompt", "Once upon a time", "--json", "--inject-fault",
                          "logit_scale=1.05"});
  ASSERT_EQ(dia.exit_code, 0) << dia.err;
  EXPECT_EQ(nlohmann::json::parse(dia.out)["planted_fault"], "logit_scale=1.05");
}

}  // namespace
}  // namespace llmport
