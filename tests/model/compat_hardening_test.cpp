// Architecture gate against adversarial variants of the real configs in shared/configs:
// defaults of absent keys (transformers' configuration_*.py), wrongly typed fields the gate
// reads, model_type contradicting architectures, and model variants the engine does not
// implement. Each variant is derived from a shared file and written to a temp dir.
#include <gtest/gtest.h>

#include <algorithm>

#include "llmport/compat.hpp"
#include "llmport/error.hpp"
#include "llmport/model_config.hpp"
#include "model/model_fixture.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::run_llmport;
using test::TempDir;

json shared_config(const std::string& name) { return test::read_json(test::shared_path("configs/" + name)); }

struct CheckOut {
  int exit_code;
  std::string text;  ///< stdout + stderr
};

CheckOut check_cli(const json& c) {
  TempDir t;
  fs::path p = t.path() / "config.json";
  test::write_json(p, c);
  auto r = run_llmport({"check", p.string()});
  return {r.exit_code, r.out + r.err};
}

void expect_contains(const std::string& text, const std::string& what) {
  EXPECT_NE(text.find(what), std::string::npos) << "expected '" << what << "' in: " << text;
}

// --- defaults of absent keys ---------------------------------------------------------

TEST(CompatHardening, Qwen2WithoutUseSlidingWindowIgnoresItsWindow) {
  // Qwen2Config / Qwen3Config: use_sliding_window=False when absent, so sliding_window is
  // not effective (expected.json: "Qwen2 without use_sliding_window takes the default false").
  for (const char* file : {"qwen2.5-7b.json", "qwen3-8b.json"}) {
    SCOPED_TRACE(file);
    json c = shared_config(file);
    c.erase("use_sliding_window");
    c["sliding_window"] = 8;
    auto r = check_compat(c);
    EXPECT_TRUE(r.accepted) << r.message;
    EXPECT_EQ(check_cli(c).exit_code, kExitOk);
    c["use_sliding_window"] = true;  // explicit true still rejects
    EXPECT_EQ(check_compat(c).reason, "sliding_window");
  }
  // Mistral has no such flag: its sliding_window 8 < max_position_embeddings is effective.
  json m = shared_config("mistral-7b-instruct-v0.3.json");
  m["sliding_window"] = 8;
  EXPECT_EQ(check_compat(m).reason, "sliding_window");
  // ... and a use_sliding_window false written into it does not switch the window off
  // (MistralConfig never reads the key): it was ACCEPTed. So for the 4096 default.
  m["sliding_window"] = 4096;
  m["use_sliding_window"] = false;
  EXPECT_EQ(check_compat(m).reason, "sliding_window");
  m.erase("sliding_window");
  EXPECT_EQ(check_compat(m).reason, "sliding_window");
  // A Qwen2 window of 0 with the flag false is ignored as any other value (it was refused,
  // exit 2, as "expected an integer >= 1").
  json q = shared_config("qwen2-0.5b.json");
  q["sliding_window"] = 0;
  q["use_sliding_window"] = false;
  EXPECT_TRUE(check_compat(q).accepted) << check_compat(q).message;
}

TEST(CompatHardening, AbsentMaxPositionEmbeddingsTakesTheClassDefault) {
  // LlamaConfig's max_position_embeddings default is 2048: a window of 2048 is not smaller.
  json c = shared_config("llama-2-7b-chat-hf.json");
  c.erase("max_position_embeddings");
  c["sliding_window"] = 2048;
  EXPECT_TRUE(check_compat(c).accepted) << check_compat(c).message;
  c["sliding_window"] = 1024;
  EXPECT_EQ(check_compat(c).reason, "sliding_window");
}

// --- wrongly typed fields ----------------------------------------------------------------

struct BadField {
  const char* file;
  const char* key;
  json value;
  const char* expected;  ///< words the error must contain
};

TEST(CompatHardening, WronglyTypedGateFieldsAreBadInputNamingTheField) {
  const std::vector<BadField> cases = {
      {"qwen2.5-7b.json", "use_sliding_window", "true", "true/false"},
      {"qwen2.5-7b.json", "use_sliding_window", "false", "true/false"},
      {"qwen2.5-7b.json", "use_sliding_window", 0, "true/false"},
      {"mistral-7b-instruct-v0.3.json", "sliding_window", "4096", "integer"},
      {"mistral-7b-instruct-v0.3.json", "sliding_window", false, "integer"},
      {"mistral-7b-instruct-v0.3.json", "sliding_window_size", "4096", "integer"},
      {"llama-3.1-8b.json", "num_experts", "8", "integer"},
      {"llama-3.1-8b.json", "num_local_experts", "8", "integer"},
      {"llama-3.1-8b.json", "n_routed_experts", 8.5, "integer"},
      {"llama-3.1-8b.json", "moe_num_experts", json::array({8}), "integer"},
      {"llama-3.1-8b.json", "num_local_experts", -1, ">= 0"},
      {"llama-3.1-8b.json", "is_encoder_decoder", "false", "true/false"},
      {"llama-3.1-8b.json", "max_position_embeddings", "131072", "integer"},
      {"llama-3.1-8b.json", "hidden_act", 1, "string"},
      {"llama-3.1-8b.json", "hidden_act", nullptr, "string"},
      {"llama-3.1-8b.json", "model_type", 7, "string"},
      {"llama-3.1-8b.json", "architectures", json::array({7}), "list of class names"},
      {"llama-3.1-8b.json", "layer_types", "full_attention", "list of strings"},
      {"llama-3.1-8b.json", "layer_types", json::array({1, 2}), "list of strings"},
      {"llama-3.1-8b.json", "rope_scaling", "llama3", "object"},
      {"llama-3.1-8b.json", "text_config", "none", "object"},
      // null where transformers has no None default (it would fail on it).
      {"llama-3.1-8b.json", "rope_theta", nullptr, "number"},
      {"llama-3.1-8b.json", "rms_norm_eps", nullptr, "number"},
      {"llama-3.1-8b.json", "max_position_embeddings", nullptr, "integer"},
  };
  for (const auto& bc : cases) {
    json c = shared_config(bc.file);
    c[bc.key] = bc.value;
    SCOPED_TRACE(std::string(bc.file) + " " + bc.key + " = " + bc.value.dump());
    auto out = check_cli(c);
    EXPECT_EQ(out.exit_code, kExitBadInput) << out.text;
    expect_contains(out.text, std::string("'") + bc.key + "'");
    expect_contains(out.text, bc.expected);
    expect_contains(out.text, "config.json");
    EXPECT_EQ(std::count(out.text.begin(), out.text.end(), '\n'), 1) << "one line: " << out.text;
  }
}

TEST(CompatHardening, WellTypedValuesOfTheSameFieldsStillClassify) {
  // The strictness is about types: null where transformers reads None as "none", and
  // integral floats, keep their meaning.
  json c = shared_config("mistral-7b-instruct-v0.3.json");
  c["sliding_window"] = 4096.0;
  EXPECT_EQ(check_compat(c).reason, "sliding_window");
  c["sliding_window"] = nullptr;
  c["num_local_experts"] = 0;
  c["is_encoder_decoder"] = nullptr;
  EXPECT_TRUE(check_compat(c).accepted) << check_compat(c).message;
  // A foreign architecture is never accepted, so its fields are still read leniently.
  json d = shared_config("deepseek-v3.json");
  d["n_routed_experts"] = "256";
  EXPECT_EQ(check_compat(d).reason, "mla");
}

// --- model_type vs architectures -------------------------------------------------------

TEST(CompatHardening, ModelTypeContradictingArchitecturesIsRejectedNamingBoth) {
  for (const char* mt : {"t5", "mixtral", "mistral", "qwen2"}) {
    SCOPED_TRACE(mt);
    json c = shared_config("llama-3.1-8b.json");
    c["model_type"] = mt;
    auto r = check_compat(c);
    EXPECT_FALSE(r.accepted);
    EXPECT_EQ(r.reason, "unsupported_architecture");
    expect_contains(r.message, "model_type");
    expect_contains(r.message, mt);
    expect_contains(r.message, "LlamaForCausalLM");
    auto out = check_cli(c);
    EXPECT_EQ(out.exit_code, kExitRejected) << out.text;
    expect_contains(out.text, "model_type");
  }
  // The matching model_type, or none at all, is accepted.
  json c = shared_config("llama-3.1-8b.json");
  EXPECT_TRUE(check_compat(c).accepted);
  c.erase("model_type");
  EXPECT_TRUE(check_compat(c).accepted);
}

// --- variants the engine does not implement --------------------------------------------

TEST(CompatHardening, LlamaMlpBiasIsRejected) {
  // LlamaMLP: gate/up/down bias=config.mlp_bias; the engine's SwiGLU has no biases.
  json c = shared_config("llama-3.1-8b.json");
  c["mlp_bias"] = true;
  auto r = check_compat(c);
  EXPECT_EQ(r.reason, "unsupported_architecture");
  expect_contains(r.message, "mlp_bias");
  EXPECT_EQ(check_cli(c).exit_code, kExitRejected);
  c["mlp_bias"] = "true";
  EXPECT_EQ(check_cli(c).exit_code, kExitBadInput);
  // Mistral/Qwen2/Qwen3 MLPs never have a bias: transformers ignores the key there.
  json q = shared_config("qwen2.5-7b.json");
  q["mlp_bias"] = true;
  EXPECT_TRUE(check_compat(q).accepted);
}

TEST(CompatHardening, PartialRotaryFactorBelowOneIsRejected) {
  json c = shared_config("qwen3-8b.json");
  c["partial_rotary_factor"] = 0.5;
  auto r = check_compat(c);
  EXPECT_EQ(r.reason, "unsupported_architecture");
  expect_contains(r.message, "partial_rotary_factor");
  c["partial_rotary_factor"] = 1.0;
  EXPECT_TRUE(check_compat(c).accepted);
  c["partial_rotary_factor"] = "half";
  EXPECT_EQ(check_cli(c).exit_code, kExitBadInput);
}

TEST(CompatHardening, UnknownLayerTypesAreRejected) {
  json c = shared_config("qwen3-8b.json");
  const int n = c["num_hidden_layers"].get<int>();
  c["layer_types"] = json::array();
  for (int i = 0; i < n; ++i) c["layer_types"].push_back("full_attention");
  EXPECT_TRUE(check_compat(c).accepted) << check_compat(c).message;
  c["layer_types"][1] = "linear_attention";
  auto r = check_compat(c);
  EXPECT_EQ(r.reason, "unsupported_architecture");
  expect_contains(r.message, "linear_attention");
  // transformers' layer_type_validation: one entry per layer.
  c["layer_types"] = json::array({"full_attention"});
  auto out = check_cli(c);
  EXPECT_EQ(out.exit_code, kExitBadInput) << out.text;
  expect_contains(out.text, "layer_types");
}

TEST(CompatHardening, RopeScalingWithoutATypeIsBadInput) {
  // transformers reads rope_scaling["rope_type"] (or "type") and fails without one; the
  // factor must not be silently dropped.
  json c = shared_config("llama-2-7b-chat-hf.json");
  c["rope_scaling"] = {{"factor", 4.0}};
  auto out = check_cli(c);
  EXPECT_EQ(out.exit_code, kExitBadInput) << out.text;
  expect_contains(out.text, "rope_scaling");
  expect_contains(out.text, "rope_type");
  // Every type the engine does not implement is rejected by name, never ignored.
  for (const char* t : {"dynamic", "yarn", "longrope", "su", "ntk"}) {
    c["rope_scaling"] = {{"rope_type", t}, {"factor", 4.0}};
    auto r = check_compat(c);
    EXPECT_EQ(r.reason, "unsupported_rope_scaling") << t;
    expect_contains(r.message, t);
  }
}

}  // namespace
}  // namespace llmport
