// Architecture gate against shared/configs/expected.json (iterating its entries), through
// the library and through `llmport check`, plus the edge cases of the rules.
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
using test::run_llmport;
using test::TempDir;

/// The `resolved` keys expected.json states (compared for every ACCEPT entry).
void expect_resolved_equal(const json& want, const json& got, const std::string& who) {
  ASSERT_TRUE(want.is_object()) << who;
  for (auto it = want.begin(); it != want.end(); ++it) {
    ASSERT_TRUE(got.contains(it.key())) << who << ": resolved has no " << it.key();
    const json& g = got[it.key()];
    if (it.value().is_number()) {
      ASSERT_TRUE(g.is_number()) << who << ": " << it.key() << " = " << g.dump();
      EXPECT_DOUBLE_EQ(it.value().get<double>(), g.get<double>()) << who << ": " << it.key();
    } else {
      EXPECT_EQ(it.value(), g) << who << ": " << it.key();
    }
  }
}

json expected_models() {
  json e = test::read_json(test::shared_path("configs/expected.json"));
  EXPECT_TRUE(e.contains("models") && e["models"].is_object() && !e["models"].empty());
  return e["models"];
}

TEST(Compat, ExpectedJsonThroughLibrary) {
  int n = 0;
  const json models = expected_models();
  for (auto& [key, m] : models.items()) {
    SCOPED_TRACE(key);
    const fs::path file = test::shared_path("configs/" + m["file"].get<std::string>());
    const json raw = read_json_file(file);
    CompatResult r = check_compat(raw);
    const bool accept = m["verdict"] == "ACCEPT";
    EXPECT_EQ(r.accepted, accept) << r.message;
    EXPECT_EQ(json(r.reasons), m["reasons"]);
    if (accept) {
      EXPECT_TRUE(r.reason.empty());
      ModelConfig cfg = load_model_config(file);
      EXPECT_EQ(cfg.architecture, m["architecture"].get<std::string>());
      expect_resolved_equal(m["resolved"], cfg.to_json(), key);
      expect_resolved_equal(m["resolved"], r.resolved, key + " (gate)");
    } else {
      EXPECT_EQ(r.reason, m["reason"].get<std::string>());
      EXPECT_NE(std::find(r.reasons.begin(), r.reasons.end(), r.reason), r.reasons.end());
      EXPECT_NE(r.message.find(r.reason), std::string::npos) << r.message;
      try {
        load_model_config(file);
        ADD_FAILURE() << "load_model_config accepted a REJECT config";
      } catch (const UnsupportedError& e) {
        EXPECT_EQ(e.exit_code(), kExitRejected);
      }
    }
    ++n;
  }
  EXPECT_GT(n, 0);
}

TEST(Compat, ExpectedJsonThroughCli) {
  int n = 0;
  const json models = expected_models();
  for (auto& [key, m] : models.items()) {
    SCOPED_TRACE(key);
    const fs::path file = test::shared_path("configs/" + m["file"].get<std::string>());
    auto r = run_llmport({"check", file.string(), "--json"});
    const bool accept = m["verdict"] == "ACCEPT";
    EXPECT_EQ(r.exit_code, accept ? kExitOk : kExitRejected) << r.err;
    json out = json::parse(r.out);
    EXPECT_EQ(out["verdict"], m["verdict"]);
    EXPECT_EQ(out["reasons"], m["reasons"]);
    EXPECT_EQ(out["reason"], m["reason"]);
    if (accept) expect_resolved_equal(m["resolved"], out["resolved"], key);
    // --model alias and the text form give the same verdict.
    auto t = run_llmport({"check", "--model", file.string()});
    EXPECT_EQ(t.exit_code, r.exit_code);
    EXPECT_EQ(t.out.rfind(accept ? "ACCEPT" : "REJECT", 0), 0u) << t.out;
    ++n;
  }
  EXPECT_GT(n, 0);
}

/// A minimal accepted Llama config to mutate.
json llama_config() {
  return json{{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", 256},
              {"num_hidden_layers", 2}, {"num_attention_heads", 8}, {"num_key_value_heads", 2},
              {"intermediate_size", 512}, {"vocab_size", 1000}, {"max_position_embeddings", 4096},
              {"hidden_act", "silu"}, {"rms_norm_eps", 1e-5}};
}

fs::path write_config(const TempDir& t, const json& c, const std::string& name = "config.json") {
  fs::path p = t.path() / name;
  test::write_json(p, c);
  return p;
}

TEST(Compat, UnknownRopeScalingIsLowestPrecedenceAndNamed) {
  json c = llama_config();
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  auto r = check_compat(c);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.reason, "unsupported_rope_scaling");
  EXPECT_NE(r.message.find("yarn"), std::string::npos);
  c["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};  // legacy key
  r = check_compat(c);
  EXPECT_EQ(r.reason, "unsupported_rope_scaling");
  EXPECT_NE(r.message.find("dynamic"), std::string::npos);
  // Only for an otherwise accepted model: with an MoE field it is moe alone.
  c["num_local_experts"] = 8;
  r = check_compat(c);
  EXPECT_EQ(r.reasons, std::vector<std::string>{"moe"});
  // CLI: exit 3 naming the type.
  TempDir t;
  c.erase("num_local_experts");
  auto out = run_llmport({"check", write_config(t, c).string()});
  EXPECT_EQ(out.exit_code, kExitRejected);
  EXPECT_NE(out.out.find("dynamic"), std::string::npos) << out.out;
  // default / linear / llama3 are accepted (the legacy `type` key too).
  for (const json& rs : {json{{"rope_type", "default"}}, json{{"type", "linear"}, {"factor", 2.0}},
                         json{{"type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}) {
    c["rope_scaling"] = rs;
    EXPECT_TRUE(check_compat(c).accepted) << rs.dump();
  }
}

TEST(Compat, UnparsableFieldsNeverStopClassification) {
  // DeepSeek-like: YaRN rope_scaling, a string where a number belongs; still mla first.
  json c = llama_config();
  c["architectures"] = {"DeepseekV3ForCausalLM"};
  c["kv_lora_rank"] = 512;
  c["n_routed_experts"] = 64;
  c["rope_scaling"] = {{"type", "yarn"}, {"factor", "forty"}};
  c["hidden_size"] = "big";
  auto r = check_compat(c);
  EXPECT_EQ(r.reason, "mla");
  EXPECT_EQ(r.reasons, (std::vector<std::string>{"mla", "moe", "unsupported_architecture"}));
  // rope_scaling that is not even an object.
  c["rope_scaling"] = "yarn";
  EXPECT_EQ(check_compat(c).reason, "mla");
  // A config that is not an object at all classifies as unsupported_architecture.
  EXPECT_EQ(check_compat(json::array()).reason, "unsupported_architecture");
}

TEST(Compat, ForeignConfigsWithoutHiddenSizeStillReject) {
  TempDir t;
  json gpt2 = {{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}, {"n_embd", 768}, {"n_layer", 12}};
  auto r = run_llmport({"check", write_config(t, gpt2).string(), "--json"});
  EXPECT_EQ(r.exit_code, kExitRejected) << r.err;
  EXPECT_EQ(json::parse(r.out)["reason"], "unsupported_architecture");
  json t5 = {{"architectures", {"T5ForConditionalGeneration"}}, {"model_type", "t5"}, {"is_encoder_decoder", true}};
  r = run_llmport({"check", write_config(t, t5).string(), "--json"});
  EXPECT_EQ(r.exit_code, kExitRejected);
  EXPECT_EQ(json::parse(r.out)["reasons"], json({"encoder_decoder", "unsupported_architecture"}));
  // seq2seq without is_encoder_decoder: recognized from the class and model_type.
  t5.erase("is_encoder_decoder");
  EXPECT_EQ(check_compat(t5).reason, "encoder_decoder");
}

TEST(Compat, AcceptedArchitectureMissingFieldIsBadInputNamingIt) {
  TempDir t;
  for (const char* f : {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size"}) {
    json c = llama_config();
    c.erase(f);
    auto r = run_llmport({"check", write_config(t, c).string()});
    EXPECT_EQ(r.exit_code, kExitBadInput) << f;
    EXPECT_NE(r.err.find(f), std::string::npos) << r.err;
    EXPECT_THROW(load_model_config(t.path() / "config.json"), ConfigError) << f;
  }
  json c = llama_config();
  c["num_attention_heads"] = "eight";
  auto r = run_llmport({"check", write_config(t, c).string()});
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.err.find("num_attention_heads"), std::string::npos) << r.err;
  // llama3 scaling without its parameters
  c = llama_config();
  c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  r = run_llmport({"check", write_config(t, c).string()});
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.err.find("low_freq_factor"), std::string::npos) << r.err;
}

TEST(Compat, BadInputExitsTwo) {
  TempDir t;
  test::write_file(t.path() / "config.json", "{\"architectures\": [\"LlamaForCausalLM\"],");
  auto r = run_llmport({"check", (t.path() / "config.json").string()});
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("malformed JSON"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  r = run_llmport({"check", (t.path() / "nope.json").string()});
  EXPECT_EQ(r.exit_code, kExitBadInput);
  fs::create_directories(t.path() / "empty");
  r = run_llmport({"check", (t.path() / "empty").string()});
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
  r = run_llmport({"check", write_config(t, llama_config()).string(), "--max-seq", "abc"});
  EXPECT_EQ(r.exit_code, kExitBadInput);
}

TEST(Compat, SlidingWindowRulesAndMaxSeqCap) {
  json c = llama_config();
  c["architectures"] = {"MistralForCausalLM"};
  c["model_type"] = "mistral";
  c["sliding_window"] = 1024;  // < max_position_embeddings 4096
  EXPECT_EQ(check_compat(c).reason, "sliding_window");
  EXPECT_EQ(check_compat(c, 2048).reason, "sliding_window");  // 2048 > window
  auto r = check_compat(c, 1024);
  EXPECT_TRUE(r.accepted);
  ASSERT_TRUE(r.context_cap.has_value());
  EXPECT_EQ(*r.context_cap, 1024);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("capped"), std::string::npos);

  TempDir t;
  auto file = write_config(t, c);
  ModelConfig cfg = load_model_config(file, 512);
  EXPECT_EQ(cfg.max_seq, 512);
  EXPECT_EQ(cfg.sliding_window, 1024);
  auto out = run_llmport({"check", file.string(), "--max-seq", "1024", "--json"});
  EXPECT_EQ(out.exit_code, kExitOk) << out.err;
  json j = json::parse(out.out);
  EXPECT_EQ(j["verdict"], "ACCEPT");
  EXPECT_EQ(j["context_cap"], 1024);
  EXPECT_EQ(j["resolved"]["max_seq"], 1024);
  EXPECT_NE(j["notes"][0].get<std::string>().find("capped"), std::string::npos);
  out = run_llmport({"check", file.string(), "--max-seq", "1024"});
  EXPECT_NE(out.out.find("capped"), std::string::npos) << out.out;
  EXPECT_EQ(run_llmport({"check", file.string(), "--max-seq", "1025"}).exit_code, kExitRejected);

  // window >= max_position_embeddings is no effective window; null is none.
  c["sliding_window"] = 4096;
  EXPECT_TRUE(check_compat(c).accepted);
  c["sliding_window"] = nullptr;
  EXPECT_TRUE(check_compat(c).accepted);
  // MistralConfig defaults sliding_window to 4096: a config without the key has that
  // window (the max_seq <= window rule applies), an explicit null has none.
  json nokey = c;
  nokey.erase("sliding_window");
  nokey["max_position_embeddings"] = 32768;
  auto nk = check_compat(nokey);
  EXPECT_EQ(nk.reason, "sliding_window") << nk.message;
  EXPECT_NE(nk.message.find("4096"), std::string::npos) << nk.message;
  EXPECT_NE(nk.message.find("default"), std::string::npos) << nk.message;
  auto capped = check_compat(nokey, 4096);
  EXPECT_TRUE(capped.accepted) << capped.message;
  EXPECT_EQ(capped.context_cap, std::optional<int>(4096));
  EXPECT_EQ(check_compat(nokey, 4097).reason, "sliding_window");
  {
    TempDir t2;
    auto f2 = write_config(t2, nokey);
    EXPECT_EQ(load_model_config(f2, 2048).sliding_window, std::optional<int>(4096));
    auto o = run_llmport({"check", f2.string()});
    EXPECT_EQ(o.exit_code, kExitRejected) << o.out << o.err;
    EXPECT_NE((o.out + o.err).find("4096"), std::string::npos) << o.out << o.err;
  }
  nokey["max_position_embeddings"] = 4096;  // window 4096 is not < 4096: no effective window
  EXPECT_TRUE(check_compat(nokey).accepted);
  nokey["sliding_window"] = nullptr;
  nokey["max_position_embeddings"] = 32768;
  EXPECT_TRUE(check_compat(nokey).accepted);
  // Qwen2 without use_sliding_window defaults to false; Mixtral's default is no window.
  json q0 = llama_config();
  q0["architectures"] = {"Qwen2ForCausalLM"};
  q0["model_type"] = "qwen2";
  q0["max_position_embeddings"] = 32768;
  EXPECT_TRUE(check_compat(q0).accepted);
  json mx = llama_config();
  mx["architectures"] = {"MixtralForCausalLM"};
  mx["num_local_experts"] = 8;
  EXPECT_EQ(check_compat(mx).reasons, (std::vector<std::string>{"moe", "unsupported_architecture"}));
  // TRAPS #11: Qwen2 use_sliding_window false ignores its window; true rejects.
  json q = llama_config();
  q["architectures"] = {"Qwen2ForCausalLM"};
  q["model_type"] = "qwen2";
  q["sliding_window"] = 8;
  q["use_sliding_window"] = false;
  EXPECT_TRUE(check_compat(q).accepted);
  q["use_sliding_window"] = true;
  EXPECT_EQ(check_compat(q).reason, "sliding_window");
  // layer_types with sliding_attention
  json l = llama_config();
  l["layer_types"] = {"full_attention", "sliding_attention"};
  l["sliding_window"] = 512;
  EXPECT_EQ(check_compat(l).reason, "sliding_window");
  EXPECT_TRUE(check_compat(l, 512).accepted);
  // --max-seq above max_position_embeddings is refused for a model without a window.
  EXPECT_THROW(load_model_config(write_config(t, llama_config()), 8192), UsageError);
}

TEST(Compat, MultimodalWrappersClassifyTheirTextConfig) {
  // Llama-4 style: experts live in text_config.
  json l4 = {{"architectures", {"Llama4ForConditionalGeneration"}}, {"model_type", "llama4"},
             {"text_config", {{"num_local_experts", 16}, {"hidden_size", 5120}, {"num_hidden_layers", 48}}}};
  auto r = check_compat(l4);
  EXPECT_EQ(r.reasons, (std::vector<std::string>{"moe", "unsupported_architecture"}));
  EXPECT_EQ(r.resolved["emb_dim"], 5120);
  // Gemma-3 style: a sliding window in text_config; not a seq2seq model.
  json g3 = {{"architectures", {"Gemma3ForConditionalGeneration"}}, {"model_type", "gemma3"},
             {"text_config", {{"sliding_window", 1024}, {"max_position_embeddings", 131072}}}};
  EXPECT_EQ(check_compat(g3).reasons, (std::vector<std::string>{"sliding_window", "unsupported_architecture"}));
}

TEST(Compat, ActivationAndArchitectureFallbacks) {
  json c = llama_config();
  c["hidden_act"] = "gelu";
  auto r = check_compat(c);
  EXPECT_EQ(r.reason, "unsupported_architecture");
  EXPECT_NE(r.message.find("gelu"), std::string::npos);
  c["hidden_act"] = "swish";  // ACT2FN["swish"] is SiLU in transformers
  EXPECT_TRUE(check_compat(c).accepted) << check_compat(c).message;
  c = llama_config();
  c.erase("architectures");  // model_type llama maps to LlamaForCausalLM, as transformers does
  EXPECT_TRUE(check_compat(c).accepted);
  c["model_type"] = "falcon";
  EXPECT_EQ(check_compat(c).reason, "unsupported_architecture");
}

}  // namespace
}  // namespace llmport
