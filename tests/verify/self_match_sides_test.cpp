// verify's self-match teacher-forces each distinct llmport computation once
// (verify/self_match_sides.hpp). Merging two sides is safe only when they compute the same
// bits: every pair of (ISA level, dtype) sides with one key is run along a golden sequence
// and compared bit for bit, on every shared model (QKV bias, q/k norm, tied lm_head).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "llmport/engine.hpp"
#include "llmport/kernels.hpp"
#include "llmport/quant.hpp"
#include "llmport/records.hpp"
#include "llmport/runner.hpp"
#include "llmport/weights.hpp"
#include "verify/self_match_sides.hpp"
#include "verify/verify_support.hpp"

namespace llmport::verify_detail {
namespace {

namespace fs = std::filesystem;
constexpr DType kDtypes[] = {DType::F32, DType::BF16, DType::F16};

std::vector<fs::path> shared_models() {
  std::vector<fs::path> models = {test::stories_dir()};
  for (const auto& m : test::synthetic_models()) models.push_back(m);
  return models;
}

fs::path golden_of(const fs::path& model) {
  return model == test::stories_dir() ? test::stories_golden() : model / "golden.json";
}

// Logits of every step of `seq` teacher-forced on the cpu engine at `level` with `dtype`.
std::vector<float> teacher_forced(const ModelConfig& cfg, const WeightStore& w, const std::string& level, DType dtype,
                                  const RecordSequence& seq) {
  EngineOptions o;
  o.backend = "cpu";
  o.backend_level = level;
  o.dtype = dtype;
  o.threads = 2;
  EngineRunner r(cfg, w, o, "engine");
  r.prefill(seq.prompt_ids);
  std::vector<float> out(r.last_logits().begin(), r.last_logits().end());
  int pos = static_cast<int>(seq.prompt_ids.size());
  for (std::size_t k = 0; k + 1 < seq.steps.size(); ++k) {
    r.decode_step(seq.steps[k].token, pos++);
    out.insert(out.end(), r.last_logits().begin(), r.last_logits().end());
  }
  return out;
}

TEST(SelfMatchSides, SidesWithOneKeyComputeTheSameBits) {
  int merged = 0;
  for (const fs::path& model : shared_models()) {
    SCOPED_TRACE(model.filename().string());
    const ModelConfig cfg = load_model_config(model);
    const WeightStore w = WeightStore::open(model, cfg);
    const RecordSequence seq = read_record_file(golden_of(model)).sequences.front();
    std::map<std::string, std::pair<std::string, DType>> first;  // key -> its first side
    for (const std::string& level : backend_levels("cpu"))
      for (DType dt : kDtypes) {
        const std::string key = side_key(*make_backend_at("cpu", level, 2), dt, w);
        ASSERT_FALSE(key.empty()) << level;
        const auto [it, fresh] = first.try_emplace(key, level, dt);
        if (fresh) continue;
        SCOPED_TRACE(level + " " + std::string(dtype_name(dt)) + " vs " + it->second.first + " " +
                     std::string(dtype_name(it->second.second)));
        EXPECT_EQ(teacher_forced(cfg, w, level, dt, seq),
                  teacher_forced(cfg, w, it->second.first, it->second.second, seq));
        ++merged;
      }
  }
  // With AVX512_BF16 both AVX-512 levels run the same fp32 and fp16 kernels on the same
  // tiles: two merges per model.
  const auto levels = backend_levels("cpu");
  if (std::find(levels.begin(), levels.end(), "avx512bf16") != levels.end()) {
    EXPECT_EQ(merged, 2 * static_cast<int>(shared_models().size()));
  }
}

// The list holds every distinct computation once; the engine's own is marked when it runs
// on default configs (its decode run already counts; its prefill path does not), on tuned
// configs none is.
TEST(SelfMatchSides, EveryDistinctComputationOnceTheEnginesMarked) {
  const ModelConfig cfg = load_model_config(test::stories_dir());
  const WeightStore w = WeightStore::open(test::stories_dir(), cfg);
  const std::vector<std::string> levels = backend_levels("cpu");
  std::map<std::pair<std::string, DType>, std::string> key_of;
  for (const std::string& level : levels)
    for (DType dt : kDtypes) key_of[{level, dt}] = side_key(*make_backend_at("cpu", level, 2), dt, w);
  for (DType engine_dt : kDtypes)
    for (bool engine_default : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(engine_dt)) + (engine_default ? " default configs" : " tuned configs"));
      RunnerInfo engine;
      engine.kind = "engine";
      engine.backend = "cpu";
      engine.isa = levels.front();
      engine.dtype = dtype_name(engine_dt);
      const auto sides = self_match_sides(engine, engine_default, 2, w);
      std::set<std::string> want;
      for (const auto& [side, key] : key_of) want.insert(key);
      std::set<std::string> got;
      for (const auto& s : sides) EXPECT_TRUE(got.insert(key_of.at({s.level, s.dtype})).second) << s.name << " twice";
      EXPECT_EQ(got, want);
      int marked = 0;
      for (const auto& s : sides)
        if (s.is_engine) {
          ++marked;
          EXPECT_EQ(key_of.at({s.level, s.dtype}), key_of.at({levels.front(), engine_dt})) << s.name;
        }
      EXPECT_EQ(marked, engine_default ? 1 : 0);
    }
}

// Whether every row of one chunked all-rows forward of `ids` (chunks of 2..6 rows, and one
// forward) equals the last row of the prefill of its own prefix, bit for bit.
void expect_rows_equal_their_prefix_prefill(const ModelConfig& cfg, const WeightStore& w, const EngineOptions& o,
                                            const std::vector<int>& ids) {
  const std::size_t vocab = static_cast<std::size_t>(cfg.vocab_size);
  Engine eng(cfg, w, o);
  eng.reset();
  const std::vector<float> all = eng.forward(ids, true);
  std::vector<float> chunked;
  eng.reset();
  for (std::size_t at = 0, len = 2; at < ids.size(); at += len, len = len % 4 + 2) {
    len = std::min(len, ids.size() - at);
    if (ids.size() - at - len == 1) ++len;  // a 1-row chunk is a decode step (another path)
    const auto rows = eng.forward(std::span<const int>(ids.data() + at, len), true);
    chunked.insert(chunked.end(), rows.begin(), rows.end());
  }
  EXPECT_EQ(chunked, all);
  for (std::size_t n = 2; n <= ids.size(); ++n) {
    const std::vector<float> last = eng.prefill(std::span<const int>(ids.data(), n));
    EXPECT_TRUE(std::equal(last.begin(), last.end(), all.begin() + static_cast<std::ptrdiff_t>((n - 1) * vocab)))
        << "prefix of " << n;
  }
}

// self_match_prefill reads every step of a golden sequence from one chunked all-rows
// forward: that holds only while each row equals the last row of the prefill of its own
// prefix (one `run --prompt-ids PREFIX -n 1` per step). Checked bit for bit on every shared
// model, level and dtype whose lm_head takes no fp32-FMA GEMM (those run one prefill per
// step), and for the quantized engines (q8_0, q4_0; q8 and fp32 activations; lm_head kept or
// quantized) at every level and on the reference backend, with chunks of 2..6 rows as well
// as one forward (a 1-row chunk is a decode step: another path, which self_match_prefill
// never takes).
TEST(SelfMatchSides, EveryPrefillRowEqualsThePrefillOfItsPrefix) {
  int checked = 0;
  for (const fs::path& model : shared_models()) {
    SCOPED_TRACE(model.filename().string());
    const ModelConfig cfg = load_model_config(model);
    const WeightStore w = WeightStore::open(model, cfg);
    const RecordSequence seq = read_record_file(golden_of(model)).sequences.front();
    std::vector<int> ids = seq.prompt_ids;
    for (std::size_t k = 0; k < 6 && k < seq.steps.size(); ++k) ids.push_back(seq.steps[k].token);
    RunnerInfo none;
    for (const SelfMatchSide& side : self_match_sides(none, false, 2, w)) {
      if (side.lm_head_fma) continue;
      SCOPED_TRACE(side.name);
      EngineOptions o;
      o.backend = "cpu";
      o.backend_level = side.level;
      o.dtype = side.dtype;
      o.threads = 2;
      expect_rows_equal_their_prefix_prefill(cfg, w, o, ids);
      ++checked;
    }
    std::vector<std::pair<std::string, std::string>> backends = {{"reference", ""}};
    for (const std::string& level : backend_levels("cpu")) backends.emplace_back("cpu", level);
    for (const auto& [backend, level] : backends)
      for (QuantType q : {QuantType::Q8_0, QuantType::Q4_0})
        for (ActQuant act : {ActQuant::Q8, ActQuant::F32})
          for (bool lm_head : {false, true}) {
            SCOPED_TRACE(backend + " " + level + " " + std::string(quant_name(q)) +
                         (act == ActQuant::Q8 ? " q8-act" : " fp32-act") + (lm_head ? " lm_head" : ""));
            EngineOptions o;
            o.backend = backend;
            o.backend_level = level;
            o.threads = 2;
            o.quant = q;
            o.quant_act = act;
            if (lm_head) o.quant_lm_head = q;
            expect_rows_equal_their_prefix_prefill(cfg, w, o, ids);
            ++checked;
          }
  }
  EXPECT_GT(checked, 50);
}

}  // namespace
}  // namespace llmport::verify_detail
