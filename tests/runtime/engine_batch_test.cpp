// Continuous batching in the engine (Engine::forward_batch, `llmport serve`): a sequence's
// logits are bit-identical whether it runs alone or beside 7 others whose prompts are
// prefilled while it decodes, on stories260K (fp32) and a bf16 synthetic Qwen3; a prompt
// prefilled in chunks gives the logits of a one-shot prefill, bit for bit.
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "llmport/error.hpp"
#include "llmport/sampler.hpp"
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace {

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

EngineOptions batch_options(std::optional<DType> dtype, int slots, QuantType quant = QuantType::None) {
  EngineOptions o;
  o.quant = quant;
  o.backend = "cpu";
  o.dtype = dtype;
  o.threads = 2;
  o.n_slots = slots;
  o.batch_invariant = true;
  return o;
}

// Greedy alone: the logits of every sampled step (prefill's last position, then decodes).
std::vector<std::vector<float>> solo(const LoadedModel& m, std::optional<DType> dtype,
                                     const std::vector<int>& prompt, int steps, QuantType quant) {
  Engine e(m.cfg, *m.weights, batch_options(dtype, 1, quant));
  std::vector<std::vector<float>> out;
  auto logits = e.forward(prompt);
  for (int s = 0; s < steps; ++s) {
    out.push_back(logits);
    if (s + 1 < steps) logits = e.decode_step(argmax(logits));
  }
  return out;
}

// All prompts in one engine with a slot each: sequence i joins at step i (its prompt is
// prefilled in chunks of `chunk` tokens inside the same forward as the others' decode
// tokens), then everyone decodes together.
std::vector<std::vector<std::vector<float>>> batched(const LoadedModel& m, std::optional<DType> dtype,
                                                     const std::vector<std::vector<int>>& prompts,
                                                     int steps, int chunk, QuantType quant = QuantType::None) {
  const int n = static_cast<int>(prompts.size());
  Engine e(m.cfg, *m.weights, batch_options(dtype, n, quant));
  std::vector<std::vector<std::vector<float>>> out(prompts.size());
  std::vector<std::size_t> fed(prompts.size(), 0);  // prompt tokens prefilled
  std::vector<int> next(prompts.size(), -1);        // token to decode next
  for (int step = 0; step < 1000; ++step) {
    std::vector<BatchItem> items;
    std::vector<int> owner;
    for (int i = 0; i < n; ++i) {
      const auto& p = prompts[static_cast<std::size_t>(i)];
      auto& o = out[static_cast<std::size_t>(i)];
      if (i > step || static_cast<int>(o.size()) >= steps) continue;
      auto& f = fed[static_cast<std::size_t>(i)];
      if (f < p.size()) {
        const std::size_t len = std::min<std::size_t>(static_cast<std::size_t>(chunk), p.size() - f);
        items.push_back({i, std::span<const int>(p.data() + f, len)});
        f += len;
      } else {
        items.push_back({i, std::span<const int>(&next[static_cast<std::size_t>(i)], 1)});
      }
      owner.push_back(i);
    }
    if (items.empty()) break;
    const auto logits = e.forward_batch(items);
    const std::size_t V = static_cast<std::size_t>(m.cfg.vocab_size);
    EXPECT_EQ(logits.size(), items.size() * V);
    for (std::size_t j = 0; j < items.size(); ++j) {
      const int i = owner[j];
      if (fed[static_cast<std::size_t>(i)] < prompts[static_cast<std::size_t>(i)].size()) continue;
      std::vector<float> row(logits.begin() + static_cast<long>(j * V),
                             logits.begin() + static_cast<long>((j + 1) * V));
      next[static_cast<std::size_t>(i)] = argmax(row);
      out[static_cast<std::size_t>(i)].push_back(std::move(row));
    }
  }
  return out;
}

void expect_batch_invariant(const LoadedModel& m, std::optional<DType> dtype,
                            const std::vector<std::vector<int>>& prompts, int steps,
                            QuantType quant = QuantType::None) {
  for (int chunk : {3, 64}) {
    SCOPED_TRACE("prefill chunk " + std::to_string(chunk));
    const auto all = batched(m, dtype, prompts, steps, chunk, quant);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      const auto alone = solo(m, dtype, prompts[i], steps, quant);
      ASSERT_EQ(all[i].size(), alone.size()) << "sequence " << i;
      for (std::size_t s = 0; s < alone.size(); ++s)
        EXPECT_TRUE(same_bits(all[i][s], alone[s])) << "sequence " << i << " step " << s;
    }
  }
}

TEST(EngineBatch, Stories260kEightSequencesMatchTheirSoloLogitsBitForBit) {
  const LoadedModel m(shared_path("models/stories260K"));
  const auto golden = load_json(shared_path("models/stories260K/golden/public.json"));
  std::vector<std::vector<int>> prompts;
  for (const auto& c : golden.at("cases")) prompts.push_back(c.at("prompt_ids").get<std::vector<int>>());
  ASSERT_EQ(prompts.size(), 8u);
  expect_batch_invariant(m, DType::F32, prompts, 12);
  // And the greedy tokens are the golden ones.
  const auto all = batched(m, DType::F32, prompts, 32, 5);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    std::vector<int> ids;
    for (const auto& l : all[i]) ids.push_back(argmax(l));
    EXPECT_EQ(ids, golden.at("cases")[i].at("generated_ids").get<std::vector<int>>()) << i;
  }
}

// Quantized projections (q8 activation blocks at the AVX levels, the default act): a row's
// logits are the same alone (m = 1 decode) and among 8 rows, bit for bit, at every level
// LLMPORT_CPU_ISA can force (the engine's backend reads it).
TEST(EngineBatch, QuantizedStories260kEightSequencesMatchTheirSoloLogitsBitForBit) {
  const LoadedModel m(shared_path("models/stories260K"));
  const auto golden = load_json(shared_path("models/stories260K/golden/public.json"));
  std::vector<std::vector<int>> prompts;
  for (const auto& c : golden.at("cases")) prompts.push_back(c.at("prompt_ids").get<std::vector<int>>());
  const char* prev = std::getenv("LLMPORT_CPU_ISA");
  const std::string saved = prev ? prev : "";
  for (const std::string& level : backend_levels("cpu")) {
    ::setenv("LLMPORT_CPU_ISA", level.c_str(), 1);
    for (QuantType q : {QuantType::Q8_0, QuantType::Q4_0}) {
      SCOPED_TRACE(level + " " + std::string(quant_name(q)));
      expect_batch_invariant(m, DType::F32, prompts, 8, q);
    }
  }
  if (prev) ::setenv("LLMPORT_CPU_ISA", saved.c_str(), 1);
  else ::unsetenv("LLMPORT_CPU_ISA");
}

TEST(EngineBatch, Bf16SyntheticEightSequencesMatchTheirSoloLogitsBitForBit) {
  const LoadedModel m(shared_path("models/synthetic/qwen3-tiny"));
  const auto golden = load_json(shared_path("models/synthetic/qwen3-tiny/golden.json"));
  std::vector<std::vector<int>> prompts;
  for (const auto& s : golden.at("sequences")) {
    const auto ids = s.at("input_ids").get<std::vector<int>>();
    prompts.push_back(ids);
    prompts.push_back(std::vector<int>(ids.begin(), ids.begin() + static_cast<long>((ids.size() + 1) / 2)));
  }
  ASSERT_EQ(prompts.size(), 8u);
  expect_batch_invariant(m, DType::BF16, prompts, 10);
}

TEST(EngineBatch, ChunkedPrefillGivesTheOneShotLogits) {
  const LoadedModel stories(shared_path("models/stories260K"));
  const LoadedModel qwen(shared_path("models/synthetic/qwen3-tiny"));
  const auto golden = load_json(shared_path("models/synthetic/qwen3-tiny/golden.json"));
  const auto long_prompt = golden.at("sequences")[3].at("input_ids").get<std::vector<int>>();
  ASSERT_EQ(long_prompt.size(), 100u);
  std::vector<int> stories_prompt;
  for (int i = 0; i < 150; ++i) stories_prompt.push_back(1 + (i * 37) % 500);
  for (const auto& [m, dtype, prompt] :
       {std::tuple{&stories, DType::F32, stories_prompt}, std::tuple{&qwen, DType::BF16, long_prompt}}) {
    Engine one(m->cfg, *m->weights, batch_options(dtype, 1));
    const auto ref = one.forward(prompt, /*all_logits=*/true);
    const auto ref_next = one.decode_step(7);
    const std::size_t V = static_cast<std::size_t>(m->cfg.vocab_size);
    for (int chunk : {1, 7, 64}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " chunk " + std::to_string(chunk));
      Engine e(m->cfg, *m->weights, batch_options(dtype, 2));
      for (std::size_t f = 0; f < prompt.size(); f += static_cast<std::size_t>(chunk)) {
        const std::size_t len = std::min<std::size_t>(static_cast<std::size_t>(chunk), prompt.size() - f);
        const BatchItem it{1, std::span<const int>(prompt.data() + f, len)};
        const auto l = e.forward_batch(std::span<const BatchItem>(&it, 1));
        const std::size_t last = f + len - 1;
        EXPECT_TRUE(same_bits(l, std::span<const float>(ref.data() + last * V, V))) << "position " << last;
      }
      EXPECT_EQ(e.slot_pos(1), static_cast<int>(prompt.size()));
      EXPECT_EQ(e.slot_pos(0), 0);
      const int t = 7;
      const BatchItem it{1, std::span<const int>(&t, 1)};
      EXPECT_TRUE(same_bits(e.forward_batch(std::span<const BatchItem>(&it, 1)), ref_next));
    }
  }
}

TEST(EngineBatch, SlotsAreIndependentAndBadBatchesAreRejected) {
  const LoadedModel m(shared_path("models/stories260K"));
  Engine e(m.cfg, *m.weights, batch_options(DType::F32, 3));
  EXPECT_EQ(e.n_slots(), 3);
  const std::vector<int> a = {1, 403, 407}, b = {1, 5};
  const BatchItem two[2] = {{0, a}, {2, b}};
  EXPECT_EQ(e.forward_batch(two).size(), 2u * static_cast<std::size_t>(m.cfg.vocab_size));
  EXPECT_EQ(e.slot_pos(0), 3);
  EXPECT_EQ(e.slot_pos(1), 0);
  EXPECT_EQ(e.slot_pos(2), 2);
  EXPECT_EQ(e.pos(), 3);  // the single-sequence API is slot 0
  e.reset_slot(2);
  EXPECT_EQ(e.slot_pos(2), 0);
  EXPECT_EQ(e.slot_pos(0), 3);
  const BatchItem dup[2] = {{1, a}, {1, b}};
  EXPECT_THROW(e.forward_batch(dup), UsageError);
  const BatchItem bad_slot[1] = {{3, a}};
  EXPECT_THROW(e.forward_batch(bad_slot), UsageError);
  const BatchItem empty[1] = {{1, {}}};
  EXPECT_THROW(e.forward_batch(empty), UsageError);
  EXPECT_THROW(e.slot_pos(-1), UsageError);
  // Overflow of one slot is refused before any work: the other slot keeps its position.
  std::vector<int> huge(static_cast<std::size_t>(e.max_seq()), 1);
  const BatchItem over[2] = {{1, b}, {0, huge}};
  EXPECT_THROW(e.forward_batch(over), UsageError);
  EXPECT_EQ(e.slot_pos(1), 0);
  EXPECT_EQ(e.kv_cache_bytes(), 3 * Engine(m.cfg, *m.weights, batch_options(DType::F32, 1)).kv_cache_bytes());
  EngineOptions zero = batch_options(DType::F32, 0);
  EXPECT_THROW(Engine(m.cfg, *m.weights, zero), UsageError);
}

}  // namespace
}  // namespace llmport::test
