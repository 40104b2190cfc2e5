// WeightStore and SafetensorsFile: the shared models load and match their config; damaged
// copies (built in a temp dir) fail with one line naming file and tensor, exit code 2,
// through the library and through `llmport check --weights`.
#include <gtest/gtest.h>

#include <cstring>

#include "llmport/error.hpp"
#include "llmport/model_config.hpp"
#include "llmport/safetensors_writer.hpp"
#include "llmport/weights.hpp"
#include "model/model_fixture.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::RawSafetensors;
using test::TempDir;

/// Loads dir expecting an llmport::Error whose message contains every fragment; checks
/// the exit code and that `llmport check DIR --weights` reports the same line.
void expect_load_error(const fs::path& dir, const std::vector<std::string>& fragments) {
  try {
    ModelConfig cfg = load_model_config(dir);
    WeightStore::open(dir, cfg);
    ADD_FAILURE() << "no error for " << dir;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.exit_code(), kExitBadInput) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const auto& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "'" << f << "' not in: " << what;
  }
  auto r = test::run_llmport({"check", dir.string(), "--weights"});
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.out << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const auto& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << "'" << f << "' not in: " << r.err;
}

fs::path shared_model(const std::string& name) { return test::shared_path("models/synthetic/" + name); }

/// A temp copy of a shared model: `dir` holds config.json + model.safetensors.
struct ModelCopy {
  TempDir tmp;
  fs::path dir;
  explicit ModelCopy(const fs::path& src) : dir(tmp.path() / "m") { test::copy_model(src, dir); }
  fs::path st() const { return dir / "model.safetensors"; }
  RawSafetensors raw() const { return test::read_raw_safetensors(st()); }
};

TEST(Weights, SharedModelsLoadWithEveryExpectedTensor) {
  for (const auto& dir : test::shared_model_dirs()) {
    SCOPED_TRACE(dir.string());
    ModelConfig cfg = load_model_config(dir);
    WeightStore ws = WeightStore::open(dir, cfg);
    const RawSafetensors raw = test::read_raw_safetensors(dir / "model.safetensors");
    int n = 0;
    for (const TensorSpec& s : expected_tensors(cfg)) {
      const TensorView& v = ws.get(s.name);
      ASSERT_TRUE(raw.header.contains(s.name)) << s.name;
      EXPECT_EQ(v.shape, raw.header[s.name]["shape"].get<std::vector<int64_t>>()) << s.name;
      EXPECT_EQ(v.shape, s.shape) << s.name;
      EXPECT_EQ(&ws.get(s.role, s.layer), &v) << s.name;
      // The view points at the stored bytes.
      const auto b = raw.header[s.name]["data_offsets"][0].get<std::size_t>();
      EXPECT_EQ(std::memcmp(v.data, raw.data.data() + b, v.nbytes), 0) << s.name;
      ++n;
    }
    // Every tensor in the file is consumed (these files hold no leftovers).
    EXPECT_EQ(static_cast<std::size_t>(n) + (raw.header.contains("__metadata__") ? 1 : 0), raw.header.size());
    EXPECT_EQ(ws.files().size(), 1u);
    EXPECT_TRUE(ws.warnings().empty());
    const std::string dt = cfg.torch_dtype == "float32" ? "F32" : cfg.torch_dtype == "bfloat16" ? "BF16" : "F16";
    EXPECT_EQ(dtype_safetensors_name(ws.stored_dtype()), dt);
    // lm_head: its own tensor, or the embedding when tied (TRAPS #8).
    EXPECT_EQ(&ws.get(TensorRole::LmHead),
              cfg.tie_word_embeddings ? &ws.get("model.embed_tokens.weight") : &ws.get("lm_head.weight"));
  }
}

TEST(Weights, ExplicitHeadDimShapes) {
  // TRAPS #1: qwen3-tiny hidden 64, 4 heads, head_dim 32 -> q_proj [128, 64], o_proj [64, 128].
  ModelConfig cfg = load_model_config(shared_model("qwen3-tiny"));
  ASSERT_EQ(cfg.head_dim, 32);
  WeightStore ws = WeightStore::open(cfg.dir, cfg);
  EXPECT_EQ(ws.get(TensorRole::Wq, 0).shape, (std::vector<int64_t>{128, 64}));
  EXPECT_EQ(ws.get(TensorRole::Wk, 0).shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(ws.get(TensorRole::Wo, 1).shape, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(ws.get(TensorRole::QNorm, 1).shape, (std::vector<int64_t>{32}));
  // Derived head_dim (16) disagrees with the tensors: a shape error naming the tensor.
  ModelCopy m(shared_model("qwen3-tiny"));
  json c = test::read_json(m.dir / "config.json");
  c.erase("head_dim");
  test::write_json(m.dir / "config.json", c);
  expect_load_error(m.dir, {"model.safetensors", "model.layers.0.self_attn.q_proj.weight", "expected [64, 64]"});
}

TEST(Weights, TruncatedData) {
  ModelCopy m(shared_model("qwen2-tiny"));
  std::string bytes = test::read_file(m.st());
  test::write_file(m.st(), bytes.substr(0, bytes.size() - 100));
  expect_load_error(m.dir, {m.st().string(), "past the end of the data area"});
}

TEST(Weights, HeaderLengthPastEndOfFile) {
  ModelCopy m(shared_model("qwen2-tiny"));
  RawSafetensors st = m.raw();
  const auto size = fs::file_size(m.st());
  test::write_raw_safetensors(m.st(), st.header.dump(), st.data, static_cast<int64_t>(size));
  expect_load_error(m.dir, {m.st().string(), "header length", "past the end of the file"});
  // A file shorter than the 8-byte length field.
  test::write_file(m.st(), "abc");
  expect_load_error(m.dir, {m.st().string(), "too small"});
}

TEST(Weights, MalformedJsonHeader) {
  ModelCopy m(shared_model("qwen2-tiny"));
  RawSafetensors st = m.raw();
  std::string h = st.header.dump();
  h[h.size() / 2] = '{';  // breaks the JSON in the middle
  h.back() = ',';
  test::write_raw_safetensors(m.st(), h, st.data);
  expect_load_error(m.dir, {m.st().string(), "malformed JSON header"});
}

TEST(Weights, OverlappingRanges) {
  ModelCopy m(shared_model("qwen2-tiny"));
  RawSafetensors st = m.raw();
  // Point v_proj at k_proj's bytes (same shape [32, 96], so the size still matches).
  const std::string k = "model.layers.0.self_attn.k_proj.weight", v = "model.layers.0.self_attn.v_proj.weight";
  ASSERT_EQ(st.header[k]["shape"], st.header[v]["shape"]);
  st.header[v]["data_offsets"] = st.header[k]["data_offsets"];
  test::write_raw_safetensors(m.st(), st);
  expect_load_error(m.dir, {m.st().string(), "overlap", "self_attn."});
}

TEST(Weights, UnknownDtype) {
  ModelCopy m(shared_model("qwen2-tiny"));
  RawSafetensors st = m.raw();
  const std::string t = "model.layers.1.mlp.up_proj.weight";
  st.header[t]["dtype"] = "Q4_K";
  test::write_raw_safetensors(m.st(), st);
  expect_load_error(m.dir, {m.st().string(), t, "unsupported dtype Q4_K"});
  // A real safetensors dtype llmport does not read: named too.
  st.header[t]["dtype"] = "I16";
  test::write_raw_safetensors(m.st(), st);
  expect_load_error(m.dir, {t, "unsupported dtype I16"});
}

TEST(Weights, ShapeTimesDtypeMustEqualByteRange) {
  ModelCopy m(shared_model("qwen2-tiny"));
  RawSafetensors st = m.raw();
  const std::string t = "model.layers.0.mlp.down_proj.weight";  // BF16 [96, 256]
  st.header[t]["dtype"] = "F32";
  test::write_raw_safetensors(m.st(), st);
  expect_load_error(m.dir, {m.st().string(), t, "98304 bytes", "span 49152"});
}

TEST(Weights, MissingLayerTensor) {
  ModelCopy m(shared_model("qwen2-tiny"));
  RawSafetensors st = m.raw();
  st.header.erase("model.layers.1.self_attn.o_proj.weight");
  test::write_raw_safetensors(m.st(), st);
  expect_load_error(m.dir, {m.st().string(), "model.layers.1.self_attn.o_proj.weight", "missing", "layer 1"});
}

TEST(Weights, WrongShape) {
  ModelCopy m(shared_model("qwen2-tiny"));
  RawSafetensors st = m.raw();
  const std::string t = "model.layers.0.mlp.gate_proj.weight";  // [256, 96]
  st.header[t]["shape"] = {96, 256};                            // same bytes, transposed
  test::write_raw_safetensors(m.st(), st);
  expect_load_error(m.dir, {m.st().string(), t, "shape [96, 256], expected [256, 96]"});
  ModelConfig cfg = load_model_config(m.dir);
  EXPECT_THROW(WeightStore::open(m.dir, cfg), ShapeError);
}

// TRAPS #5: the Qwen2 q/k/v biases are expected; without them loading fails.
TEST(Weights, Qwen2BiasRequired) {
  ModelCopy m(shared_model("qwen2-tiny"));
  RawSafetensors st = m.raw();
  st.header.erase("model.layers.0.self_attn.k_proj.bias");
  test::write_raw_safetensors(m.st(), st);
  expect_load_error(m.dir, {"model.layers.0.self_attn.k_proj.bias", "missing"});
}

// TRAPS #6: a tensor the model does not consume is an error (q_norm under a Llama config);
// rotary_emb.inv_freq leftovers pass.
TEST(Weights, UnconsumedTensorIsAnError) {
  ModelCopy m(shared_model("qwen3-tiny"));
  json c = test::read_json(m.dir / "config.json");
  c["architectures"] = {"LlamaForCausalLM"};
  c["model_type"] = "llama";
  test::write_json(m.dir / "config.json", c);
  expect_load_error(m.dir, {m.st().string(), "self_attn.k_norm.weight", "not consumed"});

  ModelCopy q(shared_model("qwen2-tiny"));
  RawSafetensors st = q.raw();
  const std::size_t end = st.data.size();
  st.data += std::string(16 * 4, '\0');
  st.header["model.layers.0.self_attn.rotary_emb.inv_freq"] = {
      {"dtype", "F32"}, {"shape", {16}}, {"data_offsets", {end, end + 64}}};
  test::write_raw_safetensors(q.st(), st);
  ModelConfig cfg = load_model_config(q.dir);
  EXPECT_NO_THROW(WeightStore::open(q.dir, cfg));
}

// TRAPS #8: tied embeddings.
TEST(Weights, TiedEmbeddingRules) {
  // tie=true, lm_head present and equal: fine, no warning.
  ModelCopy m(shared_model("llama3-tiny"));
  RawSafetensors st = m.raw();
  const auto& emb = st.header["model.embed_tokens.weight"];
  const auto b = emb["data_offsets"][0].get<std::size_t>(), e = emb["data_offsets"][1].get<std::size_t>();
  const std::size_t end = st.data.size();
  st.data += st.data.substr(b, e - b);
  st.header["lm_head.weight"] = {{"dtype", emb["dtype"]}, {"shape", emb["shape"]}, {"data_offsets", {end, end + (e - b)}}};
  test::write_raw_safetensors(m.st(), st);
  ModelConfig cfg = load_model_config(m.dir);
  WeightStore ws = WeightStore::open(m.dir, cfg);
  EXPECT_TRUE(ws.warnings().empty());
  EXPECT_EQ(&ws.get(TensorRole::LmHead), &ws.get("model.embed_tokens.weight"));
  // Different: a warning, and the embedding is still used.
  st.data[end] = static_cast<char>(st.data[end] ^ 0x55);
  test::write_raw_safetensors(m.st(), st);
  WeightStore ws2 = WeightStore::open(m.dir, cfg);
  ASSERT_EQ(ws2.warnings().size(), 1u);
  EXPECT_NE(ws2.warnings()[0].find("lm_head.weight differs"), std::string::npos);
  EXPECT_EQ(&ws2.get(TensorRole::LmHead), &ws2.get("model.embed_tokens.weight"));
  // tie=false and no lm_head: error.
  ModelCopy s(shared_model("llama3-tiny"));
  json c = test::read_json(s.dir / "config.json");
  c["tie_word_embeddings"] = false;
  test::write_json(s.dir / "config.json", c);
  expect_load_error(s.dir, {"lm_head.weight", "missing", "tie_word_embeddings is false"});
  // Key absent: false for these families, so the same error.
  c.erase("tie_word_embeddings");
  test::write_json(s.dir / "config.json", c);
  expect_load_error(s.dir, {"lm_head.weight", "missing"});
}

// TRAPS #9: only the files the index names; each tensor from its mapped shard.
TEST(Weights, ShardedIndexAndStrayConsolidatedFile) {
  ModelCopy m(shared_model("qwen2-tiny"));
  const RawSafetensors single = m.raw();
  auto shards = test::shard_model(m.dir, 2);
  // A stray consolidated file with other tensor names next to the shards.
  write_safetensors(m.dir / "consolidated.safetensors",
                    {make_tensor("tok_embeddings.weight", DType::F32, {2, 2}, {1, 2, 3, 4})});
  ModelConfig cfg = load_model_config(m.dir);
  WeightStore ws = WeightStore::open(m.dir, cfg);
  ASSERT_EQ(ws.files().size(), 2u);
  for (const auto& f : ws.files()) EXPECT_NE(f.filename(), "consolidated.safetensors");
  for (const TensorSpec& s : expected_tensors(cfg)) {
    const TensorView& v = ws.get(s.name);
    const auto b = single.header[s.name]["data_offsets"][0].get<std::size_t>();
    EXPECT_EQ(std::memcmp(v.data, single.data.data() + b, v.nbytes), 0) << s.name;
  }
  // A tensor the index maps to a shard that lacks it.
  json index = test::read_json(m.dir / "model.safetensors.index.json");
  const std::string moved = "model.norm.weight";
  const std::string owner = index["weight_map"][moved];
  index["weight_map"][moved] = owner == shards[0] ? shards[1] : shards[0];
  test::write_json(m.dir / "model.safetensors.index.json", index);
  expect_load_error(m.dir, {moved, "not in this shard"});
  index["weight_map"][moved] = owner;
  // The same tensor listed twice, once per shard: which one loads would be a guess.
  std::string text = index.dump();
  const std::string entry = "\"" + moved + "\":\"" + owner + "\"";
  ASSERT_NE(text.find(entry), std::string::npos) << text;
  text.insert(text.find(entry), "\"" + moved + "\":\"" + (owner == shards[0] ? shards[1] : shards[0]) + "\",");
  test::write_file(m.dir / "model.safetensors.index.json", text);
  expect_load_error(m.dir, {"key \"" + moved + "\" appears twice in one object"});
  test::write_json(m.dir / "model.safetensors.index.json", index);
  // A missing shard.
  fs::remove(m.dir / shards[1]);
  expect_load_error(m.dir, {shards[1], "missing shard"});
  // A directory where the index names a shard: named as such, not as a missing shard.
  fs::create_directory(m.dir / shards[1]);
  expect_load_error(m.dir, {shards[1] + ": is a directory, not a weights file"});
}

// A directory named model.safetensors (an unpacked archive, a failed download) is no
// weights file: every command names it (exit 2), where `check` used to accept the model and
// `run` said "no model.safetensors ... (found model.safetensors)".
TEST(Weights, AWeightsPathThatIsADirectoryIsNamed) {
  ModelCopy m(shared_model("qwen2-tiny"));
  fs::remove(m.st());
  fs::create_directory(m.st());
  const std::string want = m.st().string() + ": is a directory, not a weights file";
  expect_load_error(m.dir, {want});
  for (const std::string cmd : {"check", "run"}) {
    std::vector<std::string> args = {cmd, m.dir.string()};
    if (cmd == "run") args.insert(args.end(), {"--prompt-ids", "1,2", "-n", "1"});
    const auto r = test::run_llmport(args);
    EXPECT_EQ(r.exit_code, kExitBadInput) << cmd << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << cmd << ": " << r.err;
  }
}

TEST(Weights, NoWeightFiles) {
  ModelCopy m(shared_model("qwen2-tiny"));
  fs::rename(m.st(), m.dir / "consolidated.safetensors");
  expect_load_error(m.dir, {"no model.safetensors", "consolidated.safetensors"});
}

TEST(Weights, SafetensorsFileMetadataAndViews) {
  TempDir t;
  const fs::path f = t.path() / "x.safetensors";
  write_safetensors(f, {make_tensor("a", DType::F16, {2, 3}, {1, 2, 3, 4, 5, 6}),
                        make_tensor("b", DType::F32, {0}, {}), make_tensor("c", DType::BF16, {1}, {-2.5f})},
                    {{"format", "pt"}});
  SafetensorsFile sf(f);
  ASSERT_EQ(sf.tensors().size(), 3u);
  EXPECT_EQ(sf.metadata().at("format"), "pt");
  const TensorView& a = sf.tensors().at("a");
  EXPECT_EQ(a.dtype, DType::F16);
  EXPECT_EQ(a.numel(), 6);
  EXPECT_EQ(a.nbytes, 12u);
  float out[6];
  to_f32(a.dtype, a.data, out, 6);
  EXPECT_EQ(out[5], 6.0f);
  const TensorView& c = sf.tensors().at("c");
  to_f32(c.dtype, c.data, out, 1);
  EXPECT_EQ(out[0], -2.5f);
  EXPECT_EQ(sf.tensors().at("b").nbytes, 0u);
}

}  // namespace
}  // namespace llmport
