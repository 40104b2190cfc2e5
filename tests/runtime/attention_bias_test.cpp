// attention_bias: true on a Llama config means biases on q/k/v AND o_proj (HF
// modeling_llama.py: o_proj = nn.Linear(..., bias=config.attention_bias)). Checked on copies
// of stories260K: zero biases change nothing; an o_proj bias b in the last layer adds
// exactly b to that layer's o_proj output at every position.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "engine_test_util.hpp"
#include "llmport/error.hpp"
#include "llmport/safetensors_writer.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;

std::vector<float> as_f32(const TensorView& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));  // [numel]
  EXPECT_EQ(t.dtype, DType::F32);
  std::memcpy(v.data(), t.data, v.size() * sizeof(float));
  return v;
}

// Copy of stories260K with attention_bias true; `bias(name, numel)` gives each bias
// tensor's values, `edit(name, values)` may change a weight.
fs::path biased_copy(const fs::path& dst, const std::function<std::vector<float>(const std::string&, int64_t)>& bias,
                     const std::function<void(const std::string&, std::vector<float>&)>& edit = {}) {
  const fs::path src = shared_path("models/stories260K");
  fs::create_directories(dst);
  auto cfg_json = load_json(src / "config.json");
  cfg_json["attention_bias"] = true;
  write_file(dst / "config.json", cfg_json.dump(2));
  SafetensorsFile in(src / "model.safetensors");
  std::vector<TensorData> out;
  for (const auto& [name, t] : in.tensors()) {
    auto v = as_f32(t);
    if (edit) edit(name, v);
    out.push_back(make_tensor(name, DType::F32, t.shape, v));
  }
  const int n_layers = cfg_json["num_hidden_layers"], emb = cfg_json["hidden_size"], heads = cfg_json["num_attention_heads"],
            kv = cfg_json["num_key_value_heads"], hd = cfg_json["head_dim"];
  for (int il = 0; il < n_layers; ++il) {
    const std::string p = "model.layers." + std::to_string(il) + ".self_attn.";
    for (const auto& [proj, n] : {std::pair{"q_proj", heads * hd}, {"k_proj", kv * hd}, {"v_proj", kv * hd}, {"o_proj", emb}}) {
      const std::string name = p + proj + ".bias";
      out.push_back(make_tensor(name, DType::F32, {n}, bias(name, n)));
    }
  }
  write_safetensors(dst / "model.safetensors", out);
  return dst;
}

// Probe values [n_tokens, dim] of (name, layer) from one prefill with all logits.
struct Probed {
  std::vector<float> logits;                                   // [n_tokens, vocab]
  std::map<std::pair<std::string, int>, std::vector<float>> p;  // (name, layer) -> [n_tokens, dim]
};
Probed run(const fs::path& dir, const std::vector<int>& ids) {
  LoadedModel m(dir);
  EngineOptions o;
  o.backend = "reference";
  o.dtype = DType::F32;
  o.threads = 1;
  Engine e(m.cfg, *m.weights, o);
  Probed r;
  e.set_probe([&](std::string_view name, int layer, const float* d, int n, int dim) {
    r.p[{std::string(name), layer}].assign(d, d + static_cast<std::ptrdiff_t>(n) * dim);
  });
  r.logits = e.forward(ids, /*all_logits=*/true);
  return r;
}

const std::vector<int> kIds = {1, 403, 407, 261, 378, 291, 326, 65, 372};  // a stories-like prompt

TEST(AttentionBias, ConfigRequiresFourBiasesAndZeroBiasesChangeNothing) {
  TempDir tmp;
  const fs::path dir = biased_copy(tmp.path() / "zero", [](const std::string&, int64_t n) {
    return std::vector<float>(static_cast<std::size_t>(n), 0.0f);
  });
  const ModelConfig cfg = load_model_config(dir);
  EXPECT_TRUE(cfg.qkv_bias);
  EXPECT_TRUE(cfg.o_bias);  // HF: o_proj bias = config.attention_bias
  const Probed base = run(shared_path("models/stories260K"), kIds), zero = run(dir, kIds);
  ASSERT_EQ(base.logits.size(), zero.logits.size());
  EXPECT_EQ(max_abs_diff(base.logits, zero.logits), 0.0);  // x + 0 is exact in fp32

  // The loader requires the o_proj bias: dropping it is an error naming the tensor.
  TempDir tmp2;
  const fs::path d2 = tmp2.path() / "m";
  fs::create_directories(d2);
  fs::copy_file(dir / "config.json", d2 / "config.json");
  SafetensorsFile in(dir / "model.safetensors");
  std::vector<TensorData> keep;
  for (const auto& [name, t] : in.tensors())
    if (name != "model.layers.2.self_attn.o_proj.bias") keep.push_back(make_tensor(name, DType::F32, t.shape, as_f32(t)));
  write_safetensors(d2 / "model.safetensors", keep);
  try {
    (void)WeightStore::open(d2, load_model_config(d2));
    ADD_FAILURE() << "missing o_proj bias accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.2.self_attn.o_proj.bias"), std::string::npos) << e.what();
  }
}

TEST(AttentionBias, LastLayerOProjBiasAddsExactlyBAtEveryPosition) {
  const ModelConfig orig = load_model_config(shared_path("models/stories260K"));
  const int last = orig.n_layers - 1, emb = orig.emb_dim;
  const std::string bo = "model.layers." + std::to_string(last) + ".self_attn.o_proj.bias";
  std::vector<float> b(static_cast<std::size_t>(emb));  // [emb_dim]
  for (int i = 0; i < emb; ++i) b[static_cast<std::size_t>(i)] = 0.25f * static_cast<float>((i % 7) - 3);  // exact in fp32
  auto bias = [&](const std::string& name, int64_t n) {
    return name == bo ? b : std::vector<float>(static_cast<std::size_t>(n), 0.0f);
  };
  // With the last layer's MLP output zeroed (down_proj = 0 in both models), the residual
  // stream after that layer is h + attn_out: layer_out moves by exactly b.
  const std::string down = "model.layers." + std::to_string(last) + ".mlp.down_proj.weight";
  auto zero_down = [&](const std::string& name, std::vector<float>& v) {
    if (name == down) std::fill(v.begin(), v.end(), 0.0f);
  };
  TempDir tmp;
  const fs::path with_b = biased_copy(tmp.path() / "b", bias, zero_down);
  const fs::path no_b = biased_copy(tmp.path() / "zero", [](const std::string&, int64_t n) {
    return std::vector<float>(static_cast<std::size_t>(n), 0.0f);
  }, zero_down);
  const Probed r0 = run(no_b, kIds), r1 = run(with_b, kIds);
  const int n = static_cast<int>(kIds.size());
  for (int il = 0; il < last; ++il)  // earlier layers untouched
    EXPECT_EQ(max_abs_diff(r0.p.at({"layer_out", il}), r1.p.at({"layer_out", il})), 0.0) << "layer " << il;
  for (const char* probe : {"attn_out", "layer_out"}) {
    const auto& a = r0.p.at({probe, last});
    const auto& c = r1.p.at({probe, last});
    ASSERT_EQ(a.size(), static_cast<std::size_t>(n) * emb);
    double worst = 0;
    for (int t = 0; t < n; ++t)
      for (int i = 0; i < emb; ++i) {
        const std::size_t k = static_cast<std::size_t>(t) * emb + i;
        worst = std::max(worst, std::fabs(static_cast<double>(c[k]) - a[k] - b[static_cast<std::size_t>(i)]));
      }
    EXPECT_LT(worst, 1e-5) << probe << ": delta != b";  // fp32 rounding of (x + b) only
  }
  EXPECT_GT(max_abs_diff(r0.logits, r1.logits), 1e-3);  // and the logits see it
}

}  // namespace
}  // namespace llmport::test
