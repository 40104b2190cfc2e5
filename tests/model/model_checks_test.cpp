// Phase-0 gate checks (check_model_dir) and `llmport check --weights`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "llmport/dtype.hpp"
#include "llmport/error.hpp"
#include "llmport/model_checks.hpp"
#include "llmport/weights.hpp"
#include "model/model_fixture.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::TempDir;

const Phase0Check* find_check(const Phase0Report& r, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.name == name) return &c;
  return nullptr;
}

TEST(Phase0, SharedModelsPass) {
  for (const auto& dir : test::shared_model_dirs()) {
    SCOPED_TRACE(dir.string());
    Phase0Report r = check_model_dir(dir);
    EXPECT_TRUE(r.pass) << r.error;
    EXPECT_EQ(r.exit_code, 0);
    ASSERT_TRUE(r.config.has_value());
    for (const char* name : {"config", "config_consistency", "weights"}) {
      const Phase0Check* c = find_check(r, name);
      ASSERT_NE(c, nullptr) << name;
      EXPECT_TRUE(c->pass) << name << ": " << c->detail;
    }
    EXPECT_EQ(r.n_tensors, expected_tensors(*r.config).size());
    // Stored bytes: the whole data area of these files (every tensor is consumed).
    const auto raw = test::read_raw_safetensors(dir / "model.safetensors");
    EXPECT_EQ(r.total_bytes, raw.data.size());

    auto cli = test::run_llmport({"check", dir.string(), "--weights", "--json"});
    EXPECT_EQ(cli.exit_code, kExitOk) << cli.err;
    json j = json::parse(cli.out);
    EXPECT_EQ(j["verdict"], "ACCEPT");
    EXPECT_EQ(j["phase0"]["pass"], true);
    EXPECT_EQ(j["phase0"]["n_tensors"], r.n_tensors);
  }
}

// A token id past the vocabulary is bad input (exit 2, the field named) since issue #17:
// config resolution refuses it, so it never reaches a stop list or the consistency check.
TEST(Phase0, IdsOutsideTheVocabularyAreBadInput) {
  TempDir t;
  const fs::path dir = t.path() / "m";
  test::copy_model(test::shared_path("models/synthetic/qwen2-tiny"), dir);
  json c = test::read_json(dir / "config.json");
  c["eos_token_id"] = c["vocab_size"].get<int>() + 5;
  test::write_json(dir / "config.json", c);
  Phase0Report r = check_model_dir(dir);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.exit_code, kExitBadInput);
  const Phase0Check* cc = find_check(r, "config");
  ASSERT_NE(cc, nullptr);
  EXPECT_FALSE(cc->pass);
  EXPECT_NE(cc->detail.find("field 'eos_token_id': token id 1029 is beyond vocab_size 1024"), std::string::npos)
      << cc->detail;
  auto cli = test::run_llmport({"check", dir.string(), "--weights"});
  EXPECT_EQ(cli.exit_code, kExitBadInput) << cli.out << cli.err;
  EXPECT_NE((cli.out + cli.err).find("eos_token_id"), std::string::npos) << cli.out << cli.err;
  // The consistency check still reports what the resolver cannot see (a resolved id
  // edited after loading).
  ModelConfig cfg = load_model_config(test::shared_path("models/synthetic/qwen2-tiny"));
  cfg.eos_token_ids = {cfg.vocab_size + 5};
  auto p = config_consistency_problems(cfg, test::read_json(cfg.dir / "config.json"));
  ASSERT_FALSE(p.empty());
}

TEST(Phase0, ResolvedVersusRawDisagreementIsReported) {
  ModelConfig cfg = load_model_config(test::shared_path("models/synthetic/qwen3-tiny"));
  json raw = test::read_json(cfg.dir / "config.json");
  EXPECT_TRUE(config_consistency_problems(cfg, raw).empty());
  cfg.head_dim = 16;  // what hidden/heads would give, against the explicit 32
  auto p = config_consistency_problems(cfg, raw);
  ASSERT_FALSE(p.empty());
  EXPECT_NE(p[0].find("head_dim"), std::string::npos) << p[0];
}

TEST(Phase0, RejectAndBadInputCarryTheirExitCodes) {
  Phase0Report r = check_model_dir(test::shared_path("configs/gpt2.json"));
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.exit_code, kExitRejected);
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_EQ(r.checks[0].name, "config");

  TempDir t;
  const fs::path dir = t.path() / "m";
  test::copy_model(test::shared_path("models/stories260K"), dir);
  auto st = test::read_raw_safetensors(dir / "model.safetensors");
  st.header.erase("model.layers.4.mlp.down_proj.weight");
  test::write_raw_safetensors(dir / "model.safetensors", st);
  r = check_model_dir(dir);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.error.find("model.layers.4.mlp.down_proj.weight"), std::string::npos) << r.error;
  EXPECT_EQ(r.to_json()["pass"], false);
  EXPECT_NE(r.to_text().find("FAIL weights"), std::string::npos);
}

TEST(Phase0, ConfigFileWithoutWeightsFailsAtWeights) {
  // A bare config file (named anything) resolves; its folder holds no weights.
  const fs::path cfg = test::shared_path("configs/qwen3-8b.json");
  Phase0Report r = check_model_dir(cfg);
  EXPECT_FALSE(r.pass);
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->n_layers, test::read_json(cfg)["num_hidden_layers"].get<int>());
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.error.find("no model.safetensors"), std::string::npos) << r.error;
  auto cli = test::run_llmport({"check", cfg.string(), "--weights"});
  EXPECT_EQ(cli.exit_code, kExitBadInput);
  EXPECT_EQ(test::run_llmport({"check", cfg.string()}).exit_code, kExitOk);
}

// The overflow bound is the largest magnitude whose fp32 square is finite: one float step
// above it, v * v is Inf (what an RMSNorm's sum of squares computes).
TEST(Phase0, OverflowMagnitudeIsWhereTheFp32SquareOverflows) {
  const float m = overflow_magnitude();
  const volatile float below = m, above = std::nextafter(m, std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isfinite(below * below));
  EXPECT_TRUE(std::isinf(above * above));
  EXPECT_FLOAT_EQ(m, 1.8446743e19f);
}

// Finite but huge weights (3.4e38 fits in fp32 and bf16) make the forward pass overflow:
// the scan fails on them with file, tensor, index and value; values only fp16 cannot hold
// warn.
TEST(Phase0, ScanValuesFindsWeightsWhoseSquareOverflows) {
  TempDir t;
  const fs::path dir = t.path() / "m";
  test::copy_model(test::shared_path("models/synthetic/mistral-tiny"), dir);  // fp32
  auto st = test::read_raw_safetensors(dir / "model.safetensors");
  auto set = [&](const std::string& name, std::size_t i, float v) {
    ASSERT_EQ(st.header[name]["dtype"], "F32");
    const auto b = st.header[name]["data_offsets"][0].get<std::size_t>();
    std::memcpy(st.data.data() + b + 4 * i, &v, 4);
  };
  const std::string up = "model.layers.0.mlp.up_proj.weight";
  set(up, 9, 7e4f);                                      // above fp16's max only
  set(up, 10, overflow_magnitude());                     // the bound itself: square finite
  test::write_raw_safetensors(dir / "model.safetensors", st);
  Phase0Report ok = check_model_dir(dir, std::nullopt, true);
  EXPECT_TRUE(ok.pass) << ok.error;
  ASSERT_EQ(ok.warnings.size(), 1u);
  EXPECT_NE(ok.warnings[0].find("2 weight(s) with |w| >= 65520, past fp16's max 65504 (first "), std::string::npos) << ok.warnings[0];
  EXPECT_NE(ok.warnings[0].find(up + "[9] = 70000"), std::string::npos) << ok.warnings[0];

  const std::string down = "model.layers.1.mlp.down_proj.weight";
  set(down, 5, -3.4e38f);
  set(down, 7, std::nextafter(overflow_magnitude(), 1e38f));
  test::write_raw_safetensors(dir / "model.safetensors", st);
  EXPECT_TRUE(check_model_dir(dir).pass);  // values not scanned
  Phase0Report r = check_model_dir(dir, std::nullopt, true);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.error.find((dir / "model.safetensors").string() + ": " + down + "[5] = -3.4e+38: |value| > sqrt(FLT_MAX)"),
            std::string::npos) << r.error;
  EXPECT_NE(r.error.find("(0 NaN/Inf, 2 overflowing in all tensors)"), std::string::npos) << r.error;
  auto cli = test::run_llmport({"check", dir.string(), "--scan-values"});
  EXPECT_EQ(cli.exit_code, kExitBadInput);
  EXPECT_NE(cli.err.find(down + "[5] = -3.4e+38"), std::string::npos) << cli.err;

  // bf16 holds the fp32 range: 0x7f7f is 3.39e38, 0x4780 is 65536.
  uint16_t bf16[4] = {0x3f80, 0x4780, 0x7f7f, 0x7f80};  // 1, 65536, 3.39e38, +Inf
  TensorView v;
  v.dtype = DType::BF16;
  v.shape = {4};
  v.data = bf16;
  const ValueScan s = scan_tensor_values(v);
  EXPECT_EQ(s.non_finite, 1u);
  EXPECT_EQ(s.overflowing, 1u);
  EXPECT_EQ(s.above_f16, 2u);
  EXPECT_EQ(s.first_large_index, 2u);
  EXPECT_FLOAT_EQ(s.first_large_value, bf16_to_f32(0x7f7f));
}

// The fp16 warning counts exactly the values the project's own fp16 conversion turns into
// Inf: 65519 rounds down to 65504 (not warned), 65520 is the tie that rounds to Inf.
TEST(Phase0, Fp16WarningStartsWhereFp16RoundsToInf) {
  ASSERT_EQ(f32_to_f16(65519.0f), 0x7bff);  // 65504
  ASSERT_EQ(f32_to_f16(65520.0f), 0x7c00);  // +Inf
  float w[4] = {65505.0f, -65519.0f, 65520.0f, -65520.0f};
  TensorView v;
  v.dtype = DType::F32;
  v.shape = {4};
  v.data = w;
  const ValueScan s = scan_tensor_values(v);
  EXPECT_EQ(s.above_f16, 2u);
  EXPECT_EQ(s.first_large_index, 2u);
  EXPECT_EQ(s.first_large_value, 65520.0f);
  EXPECT_EQ(s.overflowing, 0u);
}

TEST(Phase0, ScanValuesFindsNaNAndInf) {
  // Shared models hold finite weights.
  for (const auto& dir : test::shared_model_dirs()) {
    Phase0Report r = check_model_dir(dir, std::nullopt, /*scan_values=*/true);
    EXPECT_TRUE(r.pass) << dir << ": " << r.error;
    ASSERT_NE(find_check(r, "weights_finite"), nullptr);
  }
  TempDir t;
  const fs::path dir = t.path() / "m";
  test::copy_model(test::shared_path("models/synthetic/qwen2-tiny"), dir);  // bf16
  auto st = test::read_raw_safetensors(dir / "model.safetensors");
  const std::string name = "model.layers.1.mlp.up_proj.weight";
  const auto b = st.header[name]["data_offsets"][0].get<std::size_t>();
  st.data[b + 6] = static_cast<char>(0xc0);  // element 3 := 0x7fc0 (bf16 NaN)
  st.data[b + 7] = static_cast<char>(0x7f);
  st.data[b + 8] = static_cast<char>(0x80);  // element 4 := 0xff80 (bf16 -Inf)
  st.data[b + 9] = static_cast<char>(0xff);
  test::write_raw_safetensors(dir / "model.safetensors", st);
  EXPECT_TRUE(check_model_dir(dir).pass);  // shapes are fine; values not scanned
  Phase0Report r = check_model_dir(dir, std::nullopt, true);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_NE(r.error.find(name + ": 2 NaN/Inf values"), std::string::npos) << r.error;
  auto cli = test::run_llmport({"check", dir.string(), "--scan-values"});
  EXPECT_EQ(cli.exit_code, kExitBadInput);
  EXPECT_NE(cli.err.find(name), std::string::npos) << cli.err;
  // F32 and F16 exponent patterns.
  TensorView v;
  uint32_t f32[3] = {0x3f800000u, 0x7f800000u, 0xffc00001u};  // 1, +Inf, NaN
  v.dtype = DType::F32;
  v.shape = {3};
  v.data = f32;
  EXPECT_EQ(count_non_finite(v), 2u);
  uint16_t f16[3] = {0x3c00, 0x7bff, 0xfc00};  // 1, 65504 (max finite), -Inf
  v.dtype = DType::F16;
  v.data = f16;
  EXPECT_EQ(count_non_finite(v), 1u);
}

}  // namespace
}  // namespace llmport
