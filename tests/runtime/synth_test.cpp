// `llmport synth`: every tiny preset loads strictly, runs, has well-spread logits and the
// documented weight scales; output is deterministic by seed; a tokenizer sets the vocab.
#include <cmath>

#include "llmport/generate.hpp"
#include "llmport/synth.hpp"
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace fs = std::filesystem;
namespace {

double stddev(const std::vector<float>& v) {
  double s = 0, ss = 0;
  for (float x : v) {
    s += x;
    ss += static_cast<double>(x) * x;
  }
  const double m = s / v.size();
  return std::sqrt(ss / v.size() - m * m);
}

TEST(Synth, EveryTinyPresetLoadsRunsAndSpreadsLogits) {
  int n = 0;
  for (const auto& p : synth_presets()) {
    if (!p.tiny) continue;
    SCOPED_TRACE(p.name);
    TempDir tmp;
    SynthOptions o;
    o.preset = p.name;
    o.out = tmp.path() / "m";
    o.seed = 5;
    const auto r = write_synthetic_model(o);
    EXPECT_GT(r.n_params, 0u);
    LoadedModel model(o.out);  // strict: every expected tensor present with its shape, none extra
    EXPECT_EQ(model.cfg.architecture, p.config["architectures"][0].get<std::string>());
    auto eng = model.engine("reference");
    const auto logits = eng->prefill(std::vector<int>{1, 2, 3, 4, 5});
    const double sd = stddev(logits);
    EXPECT_GT(sd, 3.0);  // not near-uniform
    EXPECT_LT(sd, 30.0);
    // Embedding N(0, 1), q_proj N(0, 1/sqrt(emb)), norm weights 1 + N(0, 0.1).
    const auto& emb = model.weights->get(TensorRole::Embed);
    std::vector<float> e(static_cast<std::size_t>(emb.numel()));
    to_f32(emb.dtype, emb.data, e.data(), e.size());
    EXPECT_NEAR(stddev(e), 1.0, 0.03);
    const auto& wq = model.weights->get(TensorRole::Wq, 0);
    std::vector<float> q(static_cast<std::size_t>(wq.numel()));
    to_f32(wq.dtype, wq.data, q.data(), q.size());
    EXPECT_NEAR(stddev(q) * std::sqrt(model.cfg.emb_dim), 1.0, 0.05);
    ++n;
  }
  EXPECT_GE(n, 4);
}

TEST(Synth, DeterministicBySeed) {
  TempDir tmp;
  auto write = [&](const std::string& sub, uint64_t seed) {
    SynthOptions o;
    o.preset = "tiny-qwen2";
    o.out = tmp.path() / sub;
    o.seed = seed;
    write_synthetic_model(o);
    return read_file(o.out / "model.safetensors");
  };
  const auto a = write("a", 11), b = write("b", 11), c = write("c", 12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Synth, RealShapePresetsHaveTheirPublishedShapes) {
  // Checked from config only (writing them is for benchmarks, never CI).
  const auto& q3 = synth_preset("qwen3-0.6b").config;
  EXPECT_EQ(q3["head_dim"], 128);
  EXPECT_EQ(q3["hidden_size"], 1024);
  EXPECT_EQ(q3["num_key_value_heads"], 8);
  const auto& l32 = synth_preset("llama-3.2-1b").config;
  EXPECT_EQ(l32["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(l32["vocab_size"], 128256);
  for (const char* n : {"tinyllama-1.1b", "llama-3.2-1b", "qwen2.5-0.5b", "qwen3-0.6b", "mistral-7b"}) {
    const auto cfg = resolve_model_config(synth_preset(n).config);
    EXPECT_GT(cfg.n_layers, 0) << n;
  }
}

TEST(Synth, CliWithTokenizerSetsVocabAndRuns) {
  TempDir tmp;
  const auto out = tmp.path() / "tok-model";
  const auto r = run_llmport({"synth", "--preset", "tiny-llama", "--out", out.string(), "--seed", "3",
                              "--tokenizer", shared_path("models/stories260K").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
  const auto cfg = load_json(out / "config.json");
  EXPECT_EQ(cfg["vocab_size"], 512);
  EXPECT_EQ(cfg["bos_token_id"], 1);
  EXPECT_EQ(cfg["eos_token_id"], 2);
  const auto run = run_llmport({"run", out.string(), "--prompt", "Once upon a time", "--n-tokens", "4",
                                "--ignore-eos", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out).at("generated_ids").size(), 4u);
}

TEST(Synth, CliRefusesToOverwriteAndUnknownPresets) {
  TempDir tmp;
  write_file(tmp.path() / "keep.txt", "user data");
  auto r = run_llmport({"synth", "--preset", "tiny-qwen3", "--out", tmp.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(read_file(tmp.path() / "keep.txt"), "user data");
  EXPECT_FALSE(fs::exists(tmp.path() / "model.safetensors"));
  r = run_llmport({"synth", "--preset", "gpt-9", "--out", (tmp.path() / "x").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tiny-qwen3"), std::string::npos) << r.err;
  r = run_llmport({"synth", "--list"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("mistral-7b"), std::string::npos);
  // A --tokenizer path that does not exist is named as given, not as its parent's file.
  const std::string missing = (tmp.path() / "nonexist" / "dir").string();
  r = run_llmport({"synth", "--preset", "tiny-llama", "--tokenizer", missing, "--out", (tmp.path() / "y").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: " + missing + ": no such file or directory (a tokenizer.json or its directory)\n");
}

// --force replaces the model in a directory: the old model's tokenizer files that the new
// one does not write are removed and named (they were read with it: stories' 512-id
// tokenizer.json beside a 256-id model); a read-only tokenizer source leaves writable
// copies, so the next --force can replace them; other files stay.
TEST(Synth, ForceReplacesTheOldModelsTokenizerFiles) {
  TempDir tmp;
  const auto out = tmp.path() / "m";
  const fs::path ro = tmp.path() / "ro-tok";
  fs::create_directories(ro);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    fs::copy_file(shared_path("models/stories260K") / f, ro / f);
    fs::permissions(ro / f, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  }
  auto r = run_llmport({"synth", "--preset", "tiny-llama", "--out", out.string(), "--tokenizer", ro.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(fs::status(out / "tokenizer.json").permissions() & fs::perms::owner_write, fs::perms::none);
  write_file(out / "chat_template.jinja", "{{ messages }}");
  write_file(out / "notes.txt", "mine");
  r = run_llmport({"synth", "--preset", "tiny-llama", "--out", out.string(), "--tokenizer", ro.string(), "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "synth: removed " + (out / "chat_template.jinja").string() + " (the replaced model's; --force)\n");
  r = run_llmport({"synth", "--preset", "tiny-llama", "--out", out.string(), "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    EXPECT_FALSE(fs::exists(out / f)) << f;
    EXPECT_NE(r.err.find("synth: removed " + (out / f).string()), std::string::npos) << r.err;
  }
  EXPECT_EQ(read_file(out / "notes.txt"), "mine");
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
}

}  // namespace
}  // namespace llmport::test
