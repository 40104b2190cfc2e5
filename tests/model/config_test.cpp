// ModelConfig resolution (transformers defaults), generation_config, RoPE frequencies.
#include <gtest/gtest.h>

#include <cmath>

#include "llmport/compat.hpp"
#include "llmport/error.hpp"
#include "llmport/model_config.hpp"
#include "model/model_fixture.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::TempDir;

json base_config(const std::string& arch) {
  return json{{"architectures", {arch}}, {"hidden_size", 1024}, {"num_hidden_layers", 2},
              {"num_attention_heads", 16}, {"intermediate_size", 2048}, {"vocab_size", 1000}};
}

TEST(Config, TransformersDefaults) {
  ModelConfig c = resolve_model_config(base_config("LlamaForCausalLM"));
  EXPECT_EQ(c.n_kv_heads, 16);  // defaults to n_heads
  EXPECT_EQ(c.head_dim, 64);    // hidden_size / num_attention_heads
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rope_scaling.type, "none");
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.max_position_embeddings, 2048);  // LlamaConfig default
  EXPECT_EQ(c.max_seq, 2048);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.gqa_group(), 1);
}

// TRAPS #1: an explicit head_dim wins (Qwen3-0.6B shape), the softmax scale follows it.
TEST(Config, ExplicitHeadDimWins) {
  json j = base_config("Qwen3ForCausalLM");
  j["num_key_value_heads"] = 8;
  j["head_dim"] = 128;
  ModelConfig c = resolve_model_config(j);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_DOUBLE_EQ(c.attn_scale(), 1.0 / std::sqrt(128.0));
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.gqa_group(), 2);
  j.erase("head_dim");
  EXPECT_EQ(resolve_model_config(j).head_dim, 64);
}

// TRAPS #5: Qwen2 carries q/k/v biases without any config key; attention_bias drives
// Llama/Qwen3 (q/k/v and o_proj); Mistral never has one.
TEST(Config, BiasAndNormFlagsPerFamily) {
  EXPECT_TRUE(resolve_model_config(base_config("Qwen2ForCausalLM")).qkv_bias);
  EXPECT_FALSE(resolve_model_config(base_config("Qwen2ForCausalLM")).o_bias);
  json l = base_config("LlamaForCausalLM");
  l["attention_bias"] = true;
  EXPECT_TRUE(resolve_model_config(l).qkv_bias);
  EXPECT_TRUE(resolve_model_config(l).o_bias);
  json m = base_config("MistralForCausalLM");
  m["attention_bias"] = true;
  EXPECT_FALSE(resolve_model_config(m).qkv_bias);
  EXPECT_EQ(resolve_model_config(m).max_position_embeddings, 131072);
  EXPECT_FALSE(resolve_model_config(base_config("Qwen2ForCausalLM")).qk_norm);
  EXPECT_TRUE(resolve_model_config(base_config("Qwen3ForCausalLM")).qk_norm);
}

// TRAPS #7: rms_norm_eps is read, not hard-coded.
// The gate accepts hidden_act "swish" (ACT2FN maps it to SiLU); resolution must agree, or
// `llmport check` says nothing but "hidden_act 'swish' is not supported" (exit 3) for a
// config its own gate accepted.
TEST(Config, SwishResolvesLikeTheGateAcceptsIt) {
  json c = base_config("LlamaForCausalLM");
  c["hidden_act"] = "swish";
  ASSERT_TRUE(check_compat(c).accepted) << check_compat(c).message;
  EXPECT_EQ(resolve_model_config(c).hidden_dim, 2048);
  c["hidden_act"] = "gelu";
  EXPECT_THROW(resolve_model_config(c), UnsupportedError);
}

TEST(Config, RmsNormEpsIsRead) {
  json j = base_config("LlamaForCausalLM");
  j["rms_norm_eps"] = 1e-5;
  EXPECT_DOUBLE_EQ(resolve_model_config(j).rms_norm_eps, 1e-5);
}

TEST(Config, DtypeKeysAndTokenIdLists) {
  json j = base_config("LlamaForCausalLM");
  j["dtype"] = "bfloat16";  // transformers >= 4.56 spelling
  j["bos_token_id"] = 1;
  j["vocab_size"] = 128256;  // ids must name rows of the vocabulary
  j["eos_token_id"] = json::array({128001, 128008, 128009});
  ModelConfig c = resolve_model_config(j);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{128001, 128008, 128009}));
  j["torch_dtype"] = "float16";  // the older key wins when both are present
  EXPECT_EQ(resolve_model_config(j).torch_dtype, "float16");
  j["eos_token_id"] = "two";
  EXPECT_THROW(resolve_model_config(j), ConfigError);
  // Never narrowed, never past the vocabulary: the field is named (issue #17).
  for (const json& bad : {json(1LL << 40), json::array({2, 1LL << 32}), json(128256), json(-1)}) {
    j["eos_token_id"] = bad;
    try {
      resolve_model_config(j);
      ADD_FAILURE() << "accepted eos_token_id " << bad.dump();
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("eos_token_id"), std::string::npos) << e.what();
    }
  }
  j["eos_token_id"] = 2;
  j["bos_token_id"] = 1LL << 31;
  EXPECT_THROW(resolve_model_config(j), ConfigError);
  // llama3 original_max_position_embeddings must be an integer that fits (was cast: UB).
  j["bos_token_id"] = 1;
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 1e300}};
  try {
    resolve_model_config(j);
    ADD_FAILURE() << "accepted original_max_position_embeddings 1e300";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("original_max_position_embeddings"), std::string::npos) << e.what();
  }
}

// TRAPS #15: stop ids = config eos union generation_config eos (int or list).
TEST(Config, StopIdsUnionGenerationConfig) {
  TempDir t;
  json j = base_config("LlamaForCausalLM");
  j["vocab_size"] = 128256;
  j["eos_token_id"] = 128001;
  test::write_json(t.path() / "config.json", j);
  test::write_json(t.path() / "generation_config.json",
                   {{"eos_token_id", {128001, 128008, 128009}}, {"temperature", 0.6}, {"top_p", 0.9},
                    {"do_sample", true}, {"top_k", 40}});
  ModelConfig c = load_model_config(t.path());
  EXPECT_EQ(c.stop_ids(), (std::vector<int>{128001, 128008, 128009}));
  EXPECT_TRUE(c.generation.present);
  EXPECT_DOUBLE_EQ(*c.generation.temperature, 0.6);
  EXPECT_DOUBLE_EQ(*c.generation.top_p, 0.9);
  EXPECT_EQ(*c.generation.top_k, 40);
  EXPECT_EQ(c.dir, t.path());
  EXPECT_EQ(c.to_json()["stop_ids"], json({128001, 128008, 128009}));
  // Qwen-style: config eos 151643, generation eos [151645, 151643].
  j["vocab_size"] = 151936;
  j["eos_token_id"] = 151643;
  test::write_json(t.path() / "config.json", j);
  test::write_json(t.path() / "generation_config.json", {{"eos_token_id", {151645, 151643}}});
  EXPECT_EQ(load_model_config(t.path()).stop_ids(), (std::vector<int>{151643, 151645}));
  // A malformed generation_config.json is bad input naming that file.
  test::write_file(t.path() / "generation_config.json", "{\"eos_token_id\": [1,");
  try {
    load_model_config(t.path());
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("generation_config.json"), std::string::npos) << e.what();
  }
}

TEST(Config, InvalidStructureIsConfigError) {
  json j = base_config("LlamaForCausalLM");
  j["num_key_value_heads"] = 5;  // 16 % 5 != 0
  EXPECT_THROW(resolve_model_config(j), ConfigError);
  j = base_config("LlamaForCausalLM");
  j["num_attention_heads"] = 24;  // 1024 / 24 not integral, no head_dim
  EXPECT_THROW(resolve_model_config(j), ConfigError);
  j["head_dim"] = 64;
  EXPECT_NO_THROW(resolve_model_config(j));
  j["hidden_size"] = -4;
  EXPECT_THROW(resolve_model_config(j), ConfigError);
}

TEST(Config, SharedModelsResolveToTheirConfigJson) {
  for (const auto& dir : test::shared_model_dirs()) {
    SCOPED_TRACE(dir.string());
    const json raw = test::read_json(dir / "config.json");
    ModelConfig c = load_model_config(dir);
    EXPECT_EQ(c.architecture, raw["architectures"][0].get<std::string>());
    EXPECT_EQ(c.n_layers, raw["num_hidden_layers"].get<int>());
    EXPECT_EQ(c.emb_dim, raw["hidden_size"].get<int>());
    EXPECT_EQ(c.n_heads, raw["num_attention_heads"].get<int>());
    EXPECT_EQ(c.n_kv_heads, raw.value("num_key_value_heads", c.n_heads));
    EXPECT_EQ(c.head_dim, raw.contains("head_dim") ? raw["head_dim"].get<int>()
                                                   : raw["hidden_size"].get<int>() / raw["num_attention_heads"].get<int>());
    EXPECT_EQ(c.hidden_dim, raw["intermediate_size"].get<int>());
    EXPECT_EQ(c.vocab_size, raw["vocab_size"].get<int>());
    EXPECT_EQ(c.max_position_embeddings, raw["max_position_embeddings"].get<int>());
    EXPECT_DOUBLE_EQ(c.rope_theta, raw.value("rope_theta", 10000.0));
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, raw["rms_norm_eps"].get<double>());
    EXPECT_EQ(c.tie_word_embeddings, raw.value("tie_word_embeddings", false));
    const std::string rt = raw.contains("rope_scaling") && raw["rope_scaling"].is_object()
                               ? raw["rope_scaling"].value("rope_type", raw["rope_scaling"].value("type", "none"))
                               : "none";
    EXPECT_EQ(c.rope_scaling.type, rt);
    EXPECT_EQ(c.torch_dtype, raw.value("torch_dtype", raw.value("dtype", "")));
    if (raw["eos_token_id"].is_number()) {
      auto s = c.stop_ids();
      EXPECT_NE(std::find(s.begin(), s.end(), raw["eos_token_id"].get<int>()), s.end());
    }
  }
}

// TRAPS #2: Llama-3 scaling, head_dim 128, theta 500000, factor 8, low 1, high 4, 8192.
TEST(RopeFreq, Llama3ScalingMatchesReference) {
  ModelConfig c;
  c.head_dim = 128;
  c.rope_theta = 500000.0;
  std::vector<float> plain = rope_inv_freq(c);
  c.rope_scaling = RopeScaling{"llama3", 8.0, 1.0, 4.0, 8192};
  std::vector<float> f = rope_inv_freq(c);
  ASSERT_EQ(f.size(), 64u);
  EXPECT_NEAR(plain[29], 2.6161e-3, 1e-7);
  EXPECT_NEAR(f[29], 2.1666e-3, 1e-7);
  EXPECT_NEAR(plain[63], 2.4551e-6, 1e-10);
  EXPECT_NEAR(f[63], 3.0689e-7, 1e-11);
  for (int i = 0; i <= 28; ++i) EXPECT_EQ(f[i], plain[i]) << i;                       // unchanged
  for (int i = 29; i <= 34; ++i) {                                                     // blended
    EXPECT_LT(f[i], plain[i]) << i;
    EXPECT_GT(f[i], plain[i] / 8.0f) << i;
  }
  for (int i = 35; i < 64; ++i) EXPECT_FLOAT_EQ(f[i], plain[i] / 8.0f) << i;  // divided by 8
}

TEST(RopeFreq, DefaultAndLinear) {
  ModelConfig c;
  c.head_dim = 8;
  c.rope_theta = 10000.0;
  auto f = rope_inv_freq(c);
  ASSERT_EQ(f.size(), 4u);
  // 1 / 10000^(2i/8): 1, 0.1, 0.01, 0.001
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[1], 0.1f);
  EXPECT_FLOAT_EQ(f[2], 0.01f);
  EXPECT_FLOAT_EQ(f[3], 0.001f);
  c.rope_scaling.type = "linear";
  c.rope_scaling.factor = 4.0;
  f = rope_inv_freq(c);
  EXPECT_FLOAT_EQ(f[1], 0.025f);
  c.rope_scaling.type = "yarn";
  EXPECT_THROW(rope_inv_freq(c), UnsupportedError);
}

TEST(RopeFreq, LegacyTypeKeyResolves) {
  json j = base_config("LlamaForCausalLM");
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  ModelConfig c = resolve_model_config(j);
  EXPECT_EQ(c.rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 2.0);
  EXPECT_EQ(c.to_json()["rope_scaling_type"], "linear");
}

}  // namespace
}  // namespace llmport
