// The architecture table is the one source of the architecture rules: for every row, the
// gate, config resolution, the tensor-set check (WeightStore / phase 0) and synth agree with
// it, and the docs' support table is generated from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "llmport/architecture.hpp"
#include "llmport/compat.hpp"
#include "llmport/error.hpp"
#include "llmport/model_checks.hpp"
#include "llmport/model_config.hpp"
#include "llmport/synth.hpp"
#include "llmport/weights.hpp"
#include "model/model_fixture.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::TempDir;

/// A tiny config.json of `row`: head_dim explicit and != hidden_size / heads, GQA, untied.
json tiny_config(const Architecture& row, bool attention_bias) {
  return json{{"architectures", {std::string(row.hf_class)}},
              {"model_type", std::string(row.model_type)},
              {"hidden_size", 64},
              {"intermediate_size", 96},
              {"num_hidden_layers", 2},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 2},
              {"head_dim", 8},
              {"vocab_size", 128},
              {"max_position_embeddings", 256},
              {"hidden_act", std::string(row.hidden_act)},
              {"rms_norm_eps", 1e-6},
              {"rope_theta", 10000.0},
              {"tie_word_embeddings", false},
              {"attention_bias", attention_bias},
              {"sliding_window", nullptr},
              {"bos_token_id", 1},
              {"eos_token_id", 2},
              {"torch_dtype", "float32"}};
}

/// The row's configs worth synthesizing: attention_bias false and true, tied and untied.
std::vector<json> row_variants(const Architecture& row) {
  std::vector<json> out;
  for (bool bias : {false, true})
    for (bool tied : {false, true}) {
      json c = tiny_config(row, bias);
      c["tie_word_embeddings"] = tied;
      out.push_back(c);
    }
  return out;
}

/// What the row itself says a config's deltas are (read from the row's fields, not from
/// the functions under test).
struct RowSays {
  bool qkv_bias, o_bias, qk_norm, tied;
};
RowSays row_says(const Architecture& row, const json& c) {
  auto rule = [&](BiasRule r) {
    return r == BiasRule::Always || (r == BiasRule::AttentionBias && c.value("attention_bias", false));
  };
  return {rule(row.qkv_bias), rule(row.o_bias), row.qk_norm, c.value("tie_word_embeddings", false)};
}

fs::path synth_row(const Architecture& row, const json& config, const fs::path& out) {
  SynthPreset preset{"test-" + std::string(row.model_type), "table row", config, 1.0, 10.0, true};
  SynthOptions o;
  o.out = out;
  o.seed = 3;
  write_synthetic_model(o, preset);
  return out;
}

/// name -> shape of every tensor in a model.safetensors.
std::map<std::string, std::vector<int64_t>> stored_tensors(const fs::path& dir) {
  std::map<std::string, std::vector<int64_t>> m;
  const auto raw = test::read_raw_safetensors(dir / "model.safetensors");
  for (auto it = raw.header.begin(); it != raw.header.end(); ++it)
    if (it.key() != "__metadata__") m[it.key()] = it.value()["shape"].get<std::vector<int64_t>>();
  return m;
}

/// The message of the WeightsError/ShapeError WeightStore::open throws ("" when it opens).
std::string load_error(const fs::path& dir) {
  try {
    const ModelConfig cfg = load_model_config(dir);
    WeightStore::open(dir, cfg);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// Appends an F32 tensor of zeros to a model.safetensors.
void add_tensor(const fs::path& dir, const std::string& name, const std::vector<int64_t>& shape) {
  auto st = test::read_raw_safetensors(dir / "model.safetensors");
  int64_t n = 1;
  for (auto d : shape) n *= d;
  const std::size_t begin = st.data.size();
  st.data.append(static_cast<std::size_t>(n) * 4, '\0');
  st.header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {begin, st.data.size()}}};
  test::write_raw_safetensors(dir / "model.safetensors", st);
}

void drop_tensor(const fs::path& dir, const std::string& name) {
  auto st = test::read_raw_safetensors(dir / "model.safetensors");
  ASSERT_TRUE(st.header.contains(name)) << name;
  st.header.erase(name);
  test::write_raw_safetensors(dir / "model.safetensors", st);
}

TEST(ArchitectureTable, RowsAndRolesAreWellFormed) {
  ASSERT_FALSE(architectures().empty());
  std::set<std::string_view> classes, types;
  for (const auto& row : architectures()) {
    EXPECT_TRUE(classes.insert(row.hf_class).second) << row.hf_class;
    EXPECT_TRUE(types.insert(row.model_type).second) << row.model_type;
    EXPECT_EQ(find_architecture(row.hf_class), &row);
    EXPECT_EQ(architecture_for_model_type(row.model_type), &row);
    EXPECT_TRUE(rope_type_allowed(row, "none")) << row.hf_class;  // absent rope_scaling always resolves
    EXPECT_GT(row.default_max_position_embeddings, 0);
    EXPECT_NE(accepted_architecture_list().find(row.hf_class), std::string::npos);
  }
  EXPECT_EQ(find_architecture("MixtralForCausalLM"), nullptr);
  EXPECT_EQ(find_architecture("llamaforcausallm"), nullptr);
  // Every role once, with a unique short name and an HF name.
  std::set<int> roles;
  std::set<std::string_view> names;
  for (const auto& r : tensor_roles()) {
    EXPECT_TRUE(roles.insert(static_cast<int>(r.role)).second) << r.name;
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    EXPECT_EQ(role_name(r.role), r.name);
    EXPECT_EQ(&tensor_role(r.role), &r);
    EXPECT_TRUE(r.rank == 1 || r.rank == 2) << r.name;
  }
  EXPECT_EQ(roles.size(), static_cast<std::size_t>(TensorRole::Bo) + 1);
  EXPECT_EQ(role_shape_formula(TensorRole::Wq), "[n_heads*head_dim, emb_dim]");
  EXPECT_EQ(role_shape_formula(TensorRole::QNorm), "[head_dim]");
  EXPECT_EQ(tensor_name(TensorRole::Wk, 3), "model.layers.3.self_attn.k_proj.weight");
  EXPECT_EQ(tensor_name(TensorRole::LmHead, 3), "lm_head.weight");
}

TEST(ArchitectureTable, HeadDimRuleExistsOnce) {
  EXPECT_FALSE(head_dim_problem(64).has_value());
  ASSERT_TRUE(head_dim_problem(7).has_value());
  EXPECT_EQ(*head_dim_problem(7), "head_dim 7 is odd: RoPE rotates pairs of dimensions");
  EXPECT_TRUE(head_dim_problem(0).has_value());
  // Resolution, the consistency check and the RoPE tables all apply it.
  const Architecture& row = architectures().front();
  json c = tiny_config(row, false);
  c["head_dim"] = 7;
  try {
    resolve_model_config(c);
    ADD_FAILURE() << "odd head_dim resolved";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(*head_dim_problem(7)), std::string::npos) << e.what();
  }
  ModelConfig cfg = resolve_model_config(tiny_config(row, false));
  cfg.head_dim = 7;
  const auto problems = config_consistency_problems(cfg, tiny_config(row, false));
  EXPECT_NE(std::find(problems.begin(), problems.end(), *head_dim_problem(7)), problems.end());
  EXPECT_THROW(rope_inv_freq(cfg), ConfigError);
}

TEST(ArchitectureTable, GateAndResolutionFollowEveryRow) {
  for (const auto& row : architectures()) {
    SCOPED_TRACE(std::string(row.hf_class));
    for (const json& c : row_variants(row)) {
      SCOPED_TRACE(c.dump());
      const RowSays says = row_says(row, c);
      const CompatResult gate = check_compat(c);
      EXPECT_TRUE(gate.accepted) << gate.message;
      EXPECT_EQ(gate.message, "ACCEPT: " + std::string(row.hf_class) + " (" + std::string(row.model_type) + ")");
      EXPECT_EQ(gate.resolved["qkv_bias"], says.qkv_bias);
      EXPECT_EQ(gate.resolved["qk_norm"], says.qk_norm);
      const ModelConfig cfg = resolve_model_config(c);
      EXPECT_EQ(cfg.architecture, row.hf_class);
      EXPECT_EQ(cfg.qkv_bias, says.qkv_bias);
      EXPECT_EQ(cfg.o_bias, says.o_bias);
      EXPECT_EQ(cfg.qk_norm, says.qk_norm);
      EXPECT_EQ(cfg.tie_word_embeddings, says.tied);
      EXPECT_EQ(cfg.head_dim, 8);  // explicit head_dim wins over 64 / 4
    }
    // Defaults of absent keys come from the row.
    json c = tiny_config(row, false);
    for (const char* k : {"max_position_embeddings", "rope_theta", "tie_word_embeddings", "attention_bias",
                          "architectures"})
      c.erase(k);
    const ModelConfig cfg = resolve_model_config(c);
    EXPECT_EQ(cfg.architecture, row.hf_class);  // inferred from model_type
    EXPECT_EQ(cfg.max_position_embeddings, row.default_max_position_embeddings);
    EXPECT_DOUBLE_EQ(cfg.rope_theta, row.default_rope_theta);
    EXPECT_EQ(cfg.tie_word_embeddings, row.tie_word_embeddings_default);
    EXPECT_EQ(cfg.qkv_bias, row.qkv_bias == BiasRule::Always);
    EXPECT_TRUE(check_compat(c).accepted) << check_compat(c).message;  // sliding_window: null
  }
}

TEST(ArchitectureTable, GateRulesOfEveryRow) {
  for (const auto& row : architectures()) {
    SCOPED_TRACE(std::string(row.hf_class));
    // Sliding window: the row's default applies without a key; --max-seq within it accepts.
    json sw = tiny_config(row, false);
    sw.erase("sliding_window");
    sw["max_position_embeddings"] = 1 << 20;
    const CompatResult g = check_compat(sw);
    if (row.default_sliding_window) {
      EXPECT_EQ(g.reason, "sliding_window") << g.message;
      EXPECT_TRUE(check_compat(sw, *row.default_sliding_window).accepted);
      EXPECT_EQ(check_compat(sw, *row.default_sliding_window + 1).reason, "sliding_window");
    } else {
      EXPECT_TRUE(g.accepted) << g.message;
    }
    // RoPE scaling: every listed type with its parameters resolves; others are rejected.
    for (std::string_view t : row.rope_types) {
      json c = tiny_config(row, false);
      if (t == "linear") c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
      if (t == "llama3")
        c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                             {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
      EXPECT_TRUE(check_compat(c).accepted) << t;
      EXPECT_EQ(resolve_model_config(c).rope_scaling.type, t);
    }
    json yarn = tiny_config(row, false);
    yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    ASSERT_FALSE(rope_type_allowed(row, "yarn"));
    const CompatResult y = check_compat(yarn);
    EXPECT_EQ(y.reason, "unsupported_rope_scaling");
    EXPECT_NE(y.message.find("(" + rope_type_list(row) + ")"), std::string::npos) << y.message;
    // hidden_act: only the row's.
    json act = tiny_config(row, false);
    act["hidden_act"] = "gelu";
    EXPECT_EQ(check_compat(act).reason, "unsupported_architecture");
  }
  json other = tiny_config(architectures().front(), false);
  other["architectures"] = {"Gemma2ForCausalLM"};
  const CompatResult r = check_compat(other);
  EXPECT_EQ(r.reason, "unsupported_architecture");
  EXPECT_NE(r.message.find(accepted_architecture_list()), std::string::npos) << r.message;
}

TEST(ArchitectureTable, SynthTensorSetAndLoaderAgreeWithEveryRow) {
  for (const auto& row : architectures()) {
    for (const json& c : row_variants(row)) {
      SCOPED_TRACE(std::string(row.hf_class) + " " + c.dump());
      TempDir tmp;
      const fs::path dir = synth_row(row, c, tmp.path() / "m");
      const RowSays says = row_says(row, c);
      const ConfigCheck checked = check_model_config(dir);
      ASSERT_TRUE(checked.gate.accepted) << checked.gate.message;
      ASSERT_TRUE(checked.config.has_value());
      const ModelConfig& cfg = *checked.config;

      // synth wrote exactly the table's tensor set, with the table's shapes.
      const auto stored = stored_tensors(dir);
      const auto specs = expected_tensors(cfg);
      ASSERT_EQ(stored.size(), specs.size());
      for (const TensorSpec& s : specs) {
        ASSERT_TRUE(stored.count(s.name)) << s.name;
        EXPECT_EQ(stored.at(s.name), s.shape) << s.name;
        EXPECT_EQ(s.shape, role_shape(s.role, cfg)) << s.name;
      }
      // Shapes as the config's lengths (independent of the table's Dim formulas).
      const int64_t q = 4 * 8, kv = 2 * 8;
      EXPECT_EQ(stored.at("model.embed_tokens.weight"), (std::vector<int64_t>{128, 64}));
      EXPECT_EQ(stored.at("model.layers.1.self_attn.q_proj.weight"), (std::vector<int64_t>{q, 64}));
      EXPECT_EQ(stored.at("model.layers.1.self_attn.k_proj.weight"), (std::vector<int64_t>{kv, 64}));
      EXPECT_EQ(stored.at("model.layers.1.self_attn.o_proj.weight"), (std::vector<int64_t>{64, q}));
      EXPECT_EQ(stored.at("model.layers.1.mlp.down_proj.weight"), (std::vector<int64_t>{64, 96}));
      // Each delta's tensors exist exactly when the row says so.
      EXPECT_EQ(stored.count("model.layers.0.self_attn.q_proj.bias"), says.qkv_bias ? 1u : 0u);
      EXPECT_EQ(stored.count("model.layers.0.self_attn.v_proj.bias"), says.qkv_bias ? 1u : 0u);
      EXPECT_EQ(stored.count("model.layers.0.self_attn.o_proj.bias"), says.o_bias ? 1u : 0u);
      EXPECT_EQ(stored.count("model.layers.0.self_attn.q_norm.weight"), says.qk_norm ? 1u : 0u);
      EXPECT_EQ(stored.count("lm_head.weight"), says.tied ? 0u : 1u);
      if (says.qkv_bias) {
        EXPECT_EQ(stored.at("model.layers.0.self_attn.k_proj.bias"), (std::vector<int64_t>{kv}));
      }
      if (says.qk_norm) {
        EXPECT_EQ(stored.at("model.layers.0.self_attn.k_norm.weight"), (std::vector<int64_t>{8}));
      }

      // The tensor-set check accepts it (phase 0 included).
      EXPECT_EQ(load_error(dir), "");
      const Phase0Report p0 = check_model_dir(dir);
      EXPECT_TRUE(p0.pass) << p0.error;
      EXPECT_EQ(p0.n_tensors, specs.size());
    }
  }
}

TEST(ArchitectureTable, TensorSetCheckRequiresExactlyTheRowsTensors) {
  for (const auto& row : architectures()) {
    for (const json& c : row_variants(row)) {
      SCOPED_TRACE(std::string(row.hf_class) + " " + c.dump());
      TempDir tmp;
      const fs::path dir = synth_row(row, c, tmp.path() / "m");
      const ModelConfig cfg = load_model_config(dir);
      // Dropping any one required tensor (every role of layer 1 and the global ones) fails
      // and names it.
      for (const TensorSpec& s : expected_tensors(cfg)) {
        if (s.layer == 0) continue;
        SCOPED_TRACE(s.name);
        TempDir t2;
        test::copy_model(dir, t2.path() / "m");
        drop_tensor(t2.path() / "m", s.name);
        const std::string err = load_error(t2.path() / "m");
        EXPECT_NE(err.find(s.name), std::string::npos) << err;
        EXPECT_NE(err.find("missing"), std::string::npos) << err;
      }
      // A delta tensor the row does not call for is refused as not consumed.
      for (TensorRole r : {TensorRole::Bq, TensorRole::Bo, TensorRole::QNorm}) {
        if (role_present(r, cfg)) continue;
        SCOPED_TRACE(role_name(r));
        TempDir t2;
        test::copy_model(dir, t2.path() / "m");
        ModelConfig with = cfg;
        with.qkv_bias = with.o_bias = with.qk_norm = true;
        add_tensor(t2.path() / "m", tensor_name(r, 0), role_shape(r, with));
        const std::string err = load_error(t2.path() / "m");
        EXPECT_NE(err.find(tensor_name(r, 0) + ": tensor not consumed by " + std::string(row.hf_class)),
                  std::string::npos)
            << err;
      }
    }
  }
}

TEST(ArchitectureTable, EveryTinyPresetIsATableRow) {
  std::set<std::string_view> covered;
  for (const auto& p : synth_presets()) {
    SCOPED_TRACE(p.name);
    const Architecture* row = find_architecture(p.config["architectures"][0].get<std::string>());
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(p.config["model_type"], std::string(row->model_type));
    if (p.tiny) covered.insert(row->hf_class);
  }
  for (const auto& row : architectures()) EXPECT_TRUE(covered.count(row.hf_class)) << row.hf_class;
}

std::string squash_spaces(const std::string& s) {
  std::string out;
  for (char ch : s) {
    const bool space = ch == ' ' || ch == '\n';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : ch;
  }
  return out;
}

TEST(ArchitectureTable, DocsSupportTableIsTheTable) {
  const std::string doc = test::read_file(fs::path(LLMPORT_SOURCE_DIR) / "docs/architecture-table.md");
  const std::string begin = "<!-- support table: generated from architectures() -->\n";
  const std::string end = "<!-- end of support table -->";
  const auto b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), support_table_markdown())
      << "regenerate the table in docs/architecture-table.md from support_table_markdown()";
  for (const auto& row : architectures())
    EXPECT_NE(support_table_markdown().find("`" + std::string(row.hf_class) + "`"), std::string::npos);
  // One line per tensor role, as the table has it.
  for (const auto& r : tensor_roles()) {
    const std::string present = r.presence == Presence::Always    ? "always"
                                : r.presence == Presence::QkvBias ? "`qkv_bias`"
                                : r.presence == Presence::OBias   ? "`o_bias`"
                                : r.presence == Presence::QkNorm  ? "`qk_norm`"
                                                                  : "not `tie_word_embeddings`";
    const std::string line = "| `" + std::string(r.name) + "` | `" + std::string(r.hf_name) + "` | " +
                             role_shape_formula(r.role) + " | " + present + " |\n";
    EXPECT_NE(doc.find(line), std::string::npos) << line;
  }
  // The README's scope sentence names every row with its delta.
  const std::string readme = test::read_file(fs::path(LLMPORT_SOURCE_DIR) / "README.md");
  EXPECT_NE(squash_spaces(readme).find("In scope: " + supported_families_sentence() + ":"), std::string::npos)
      << supported_families_sentence();
}

}  // namespace
}  // namespace llmport
