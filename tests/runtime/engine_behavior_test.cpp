// Engine behaviour beyond the goldens: stop ids, context overflow before any work, Qwen2
// bias (TRAPS #5), tied embeddings with a stray lm_head (#8), use_sliding_window false (#11),
// probes, profiling, default dtype, thread-count invariance.
#include <cstring>
#include <fstream>

#include "llmport/error.hpp"
#include "llmport/generate.hpp"
#include "llmport/safetensors_writer.hpp"
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace fs = std::filesystem;
namespace {

// A copy of a shared model dir in `tmp` with config.json edited by `edit` (weights linked).
fs::path model_copy(const fs::path& src, const fs::path& tmp,
                    const std::function<void(nlohmann::json&)>& edit) {
  for (const auto& e : fs::directory_iterator(src)) {
    if (e.path().filename() == "config.json") continue;
    if (e.is_regular_file()) fs::create_symlink(e.path(), tmp / e.path().filename());
  }
  auto cfg = load_json(src / "config.json");
  edit(cfg);
  std::ofstream(tmp / "config.json") << cfg.dump(2);
  return tmp;
}

TEST(Generate, StopsAtAStopIdWhichIsNotEmitted) {
  const auto dir = shared_path("models/stories260K");
  const auto golden = load_json(dir / "golden/public.json");
  LoadedModel model(dir);
  auto eng = model.engine("reference");
  const auto& c = golden.at("cases").at(0);
  const auto want = c.at("generated_ids").get<std::vector<int>>();
  const int stop = want.at(6);
  const auto first = static_cast<std::size_t>(std::find(want.begin(), want.end(), stop) - want.begin());
  GenerateOptions opt;
  opt.n_tokens = 32;
  opt.stop_ids = {99999, stop};
  std::vector<int> streamed;
  const auto r = generate(*eng, c.at("prompt_ids").get<std::vector<int>>(), opt,
                          [&](int id) { streamed.push_back(id); });
  EXPECT_EQ(r.stop_reason, "stop_id");
  EXPECT_EQ(r.generated_ids, std::vector<int>(want.begin(), want.begin() + static_cast<long>(first)));
  EXPECT_EQ(streamed, r.generated_ids);
  EXPECT_EQ(r.steps.size(), first + 1);
  EXPECT_EQ(r.n_decode, static_cast<int>(first));

  opt.n_tokens = 3;  // budget before the stop id
  const auto r3 = generate(*eng, c.at("prompt_ids").get<std::vector<int>>(), opt);
  EXPECT_EQ(r3.stop_reason, "n_tokens");
  EXPECT_EQ(r3.generated_ids, std::vector<int>(want.begin(), want.begin() + 3));
  EXPECT_EQ(r3.n_decode, 2);  // the last token needs no forward pass
}

TEST(Generate, ContextOverflowIsAUsageErrorBeforeAnyWork) {
  LoadedModel model(shared_path("models/stories260K"));
  EngineOptions o;
  o.backend = "reference";
  o.max_seq = 16;
  Engine eng(model.cfg, *model.weights, o);
  EXPECT_EQ(eng.max_seq(), 16);
  eng.forward(std::vector<int>{1, 2, 3});
  const std::vector<int> prompt(10, 5);
  GenerateOptions opt;
  opt.n_tokens = 8;  // 10 + 8 - 1 = 17 positions (the last token is never fed back)
  EXPECT_THROW(generate(eng, prompt, opt), UsageError);
  EXPECT_EQ(eng.pos(), 3);  // nothing ran: the cache is untouched
  EXPECT_THROW(generate(eng, std::vector<int>(17, 5), GenerateOptions{}), UsageError);
  EXPECT_THROW(generate(eng, std::vector<int>{}, GenerateOptions{}), UsageError);
  EXPECT_THROW(eng.forward(std::vector<int>(14, 5)), UsageError);
  EXPECT_EQ(eng.pos(), 3);
  opt.n_tokens = 7;
  EXPECT_NO_THROW(generate(eng, prompt, opt));  // 10 + 7 - 1 = 16: exactly fills the context
  EXPECT_THROW(eng.forward(std::vector<int>{model.cfg.vocab_size}), UsageError);  // id out of range
  o.max_seq = model.cfg.max_seq + 1;
  EXPECT_THROW(Engine(model.cfg, *model.weights, o), UsageError);
}

// TRAPS #5: Qwen2 has q/k/v bias without a config key; dropping it must change the logits.
TEST(EngineTraps, Qwen2BiasMatters) {
  LoadedModel model(shared_path("models/synthetic/qwen2-tiny"));
  ASSERT_TRUE(model.cfg.qkv_bias);
  const std::vector<int> ids{3, 14, 15, 92, 65, 35};
  const auto clean = model.engine("reference")->prefill(ids);
  for (int il = 0; il < model.cfg.n_layers; ++il) {
    FaultInjection f;
    f.kind = FaultInjection::Kind::DropQkvBias;
    f.layer = il;
    EXPECT_GT(max_abs_diff(model.engine("reference", {}, f)->prefill(ids), clean), 0.1) << il;
  }
}

// TRAPS #8: tied embeddings with a differing lm_head.weight present: no crash, a warning,
// and the embedding is used.
TEST(EngineTraps, TiedModelIgnoresADifferingLmHead) {
  const auto src = shared_path("models/synthetic/llama3-tiny");
  TempDir tmp;
  LoadedModel orig(src);
  ASSERT_TRUE(orig.cfg.tie_word_embeddings);
  for (const auto& e : fs::directory_iterator(src))
    if (e.path().filename() != "model.safetensors" && e.is_regular_file())
      fs::copy_file(e.path(), tmp.path() / e.path().filename());
  SafetensorsFile f(src / "model.safetensors");
  std::vector<TensorData> out;
  for (const auto& [name, v] : f.tensors()) {
    const auto* p = static_cast<const uint8_t*>(v.data);
    out.push_back({name, v.dtype, v.shape, std::vector<uint8_t>(p, p + v.nbytes)});
  }
  std::vector<float> junk(static_cast<std::size_t>(orig.cfg.vocab_size) * orig.cfg.emb_dim, 0.25f);
  out.push_back(make_tensor("lm_head.weight", DType::BF16, {orig.cfg.vocab_size, orig.cfg.emb_dim}, junk));
  write_safetensors(tmp.path() / "model.safetensors", out);

  LoadedModel with_head(tmp.path());
  EXPECT_FALSE(with_head.weights->warnings().empty());
  const std::vector<int> ids{1, 2, 3, 4, 5};
  EXPECT_EQ(with_head.engine("reference")->prefill(ids), orig.engine("reference")->prefill(ids));
}

// TRAPS #11: use_sliding_window false with a small sliding_window is full causal attention.
TEST(EngineTraps, UseSlidingWindowFalseIsFullAttention) {
  const auto src = shared_path("models/synthetic/qwen2-tiny");
  TempDir tmp;
  model_copy(src, tmp.path(), [](nlohmann::json& c) {
    c["use_sliding_window"] = false;
    c["sliding_window"] = 8;
  });
  LoadedModel windowed(tmp.path());
  LoadedModel orig(src);
  std::vector<int> ids(20);
  for (int i = 0; i < 20; ++i) ids[static_cast<std::size_t>(i)] = (i * 53 + 11) % 1024;
  auto a = windowed.engine("reference");
  auto b = orig.engine("reference");
  const auto la = a->forward(ids, true);
  const auto lb = b->forward(ids, true);
  EXPECT_EQ(la, lb);
}

TEST(EngineProbes, EveryNamedProbeWithItsShape) {
  LoadedModel model(shared_path("models/synthetic/qwen3-tiny"));
  auto eng = model.engine("reference");
  std::map<std::string, int> count;
  std::map<std::string, int> dims;
  eng->set_probe([&](std::string_view name, int layer, const float*, int n, int dim) {
    EXPECT_EQ(n, 4);
    ++count[std::string(name)];
    dims[std::string(name)] = dim;
    if (name == "embedding" || name == "final_norm") {
      EXPECT_EQ(layer, -1);
    }
  });
  eng->prefill(std::vector<int>{1, 2, 3, 4});
  const auto& c = model.cfg;
  for (const char* n : {"attn_norm", "q", "k", "v", "attn_out", "ffn_norm", "ffn_out", "layer_out"})
    EXPECT_EQ(count[n], c.n_layers) << n;
  EXPECT_EQ(count["embedding"], 1);
  EXPECT_EQ(count["final_norm"], 1);
  EXPECT_EQ(dims["q"], c.n_heads * c.head_dim);  // 128 != emb_dim 64 (explicit head_dim)
  EXPECT_EQ(dims["k"], c.n_kv_heads * c.head_dim);
  EXPECT_EQ(dims["layer_out"], c.emb_dim);
  // Probes must not change the result.
  const auto with = eng->prefill(std::vector<int>{1, 2, 3, 4});
  eng->set_probe({});
  EXPECT_EQ(eng->prefill(std::vector<int>{1, 2, 3, 4}), with);
}

TEST(EngineProfile, PerOpTimesOnlyWhenEnabled) {
  LoadedModel model(shared_path("models/stories260K"));
  auto eng = model.engine("reference");
  eng->prefill(std::vector<int>{1, 403, 407});
  EXPECT_TRUE(eng->profile().empty());
  eng->set_profiling(true);
  eng->prefill(std::vector<int>{1, 403, 407});
  eng->decode_step(261);
  std::map<std::string, OpProfile> ops;
  for (const auto& o : eng->profile()) ops[o.op] = o;
  for (const char* op : {"embedding", "linear_qkv", "rope", "kv_store", "attention", "linear_o", "linear_gate_up",
                         "swiglu", "linear_down", "rmsnorm", "add", "lm_head"})
    EXPECT_TRUE(ops.count(op)) << op;
  EXPECT_EQ(ops["attention"].calls, 2u * model.cfg.n_layers);
  EXPECT_EQ(ops["lm_head"].calls, 2u);
  EXPECT_GE(ops["attention"].ms, 0.0);
}

TEST(EngineDtype, DefaultsToTheCheckpointDtype) {
  LoadedModel bf16(shared_path("models/synthetic/llama3-tiny"));
  EXPECT_EQ(bf16.engine("reference")->dtype(), DType::BF16);
  LoadedModel fp32(shared_path("models/synthetic/mistral-tiny"));
  EXPECT_EQ(fp32.engine("reference")->dtype(), DType::F32);
  EXPECT_EQ(fp32.engine("reference", DType::BF16)->dtype(), DType::BF16);
}

TEST(EngineDtype, Bf16ComputeKeepsStoriesTop1) {
  // The stories260K golden is fp32; bf16 weights keep the first greedy token of every case
  // whose margin is wide (> 0.5).
  const auto dir = shared_path("models/stories260K");
  const auto golden = load_json(dir / "golden/public.json");
  LoadedModel model(dir);
  auto eng = model.engine("reference", DType::BF16);
  int checked = 0;
  for (const auto& c : golden.at("cases")) {
    const auto& s0 = c.at("steps").at(0);
    if (s0.at("top1_minus_top2").get<double>() < 0.5) continue;
    const auto logits = eng->prefill(c.at("prompt_ids").get<std::vector<int>>());
    EXPECT_EQ(argmax(logits), s0.at("token_id").get<int>());
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// The cpu engine's logits do not depend on its thread count, bit for bit (prefill of a
// prompt that 1 and 2 threads cut into different attention work items, then decode), for
// every shared model in fp32 and bf16: a deployment reproduces at any -t, and verify's
// self-match (which runs at the engine's count) sees a golden made at another.
TEST(EngineThreads, LogitsDoNotDependOnTheThreadCount) {
  std::vector<int> prompt;
  for (int i = 0; i < 13; ++i) prompt.push_back(1 + 4 * i);
  int checked = 0;
  for (const char* name : {"stories260K", "synthetic/llama3-tiny", "synthetic/qwen2-tiny", "synthetic/qwen3-tiny",
                           "synthetic/mistral-tiny"}) {
    LoadedModel model(shared_path(std::string("models/") + name));
    for (DType dt : {DType::F32, DType::BF16}) {
      std::vector<std::vector<float>> first;
      for (int threads : {1, 2, 3}) {
        EngineOptions o;
        o.backend = "cpu";
        o.dtype = dt;
        o.threads = threads;
        Engine eng(model.cfg, *model.weights, o);
        std::vector<std::vector<float>> steps{eng.prefill(prompt)};
        for (int s = 0; s < 4; ++s) steps.push_back(eng.decode_step(7 + s));
        if (threads == 1) first = steps;
        for (std::size_t s = 0; s < steps.size(); ++s)
          EXPECT_EQ(std::memcmp(steps[s].data(), first[s].data(), steps[s].size() * sizeof(float)), 0)
              << name << " " << dtype_name(dt) << " threads " << threads << " step " << s;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 10);
}

}  // namespace
}  // namespace llmport::test
