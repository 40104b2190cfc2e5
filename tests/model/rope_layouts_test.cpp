// RoPE settings in transformers v5's layout (rope_parameters, holding rope_theta and the
// scaling) and v4's (top-level rope_theta, rope_scaling): either alone resolves alike; both
// with different values are refused, since v5 reads rope_parameters first and v4 only the
// top level (adversarial round of session 37: rope_theta 10000 beside rope_parameters'
// 500000 passed plain with the top-level value).
#include <gtest/gtest.h>

#include <fstream>

#include "llmport/compat.hpp"
#include "llmport/error.hpp"
#include "llmport/model_config.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

using nlohmann::json;

// The real llama3-tiny config with its RoPE settings taken out.
json base_config() {
  std::ifstream f(test::shared_path("models/synthetic/llama3-tiny") / "config.json");
  json c = json::parse(f);
  c.erase("rope_theta");
  c.erase("rope_scaling");
  c.erase("rope_parameters");
  return c;
}

const json kLlama3Scaling = {{"rope_type", "llama3"},
                             {"factor", 8.0},
                             {"low_freq_factor", 1.0},
                             {"high_freq_factor", 4.0},
                             {"original_max_position_embeddings", 64}};

std::string refusal(const json& c) {
  try {
    resolve_model_config(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(RopeLayouts, TheV5LayoutAloneResolvesAsTheV4One) {
  json v4 = base_config();
  v4["rope_theta"] = 500000.0;
  v4["rope_scaling"] = kLlama3Scaling;
  json v5 = base_config();
  v5["rope_parameters"] = kLlama3Scaling;
  v5["rope_parameters"]["rope_theta"] = 500000.0;
  const ModelConfig a = resolve_model_config(v4), b = resolve_model_config(v5);
  EXPECT_EQ(b.rope_theta, 500000.0);
  EXPECT_EQ(b.rope_scaling.type, "llama3");
  EXPECT_EQ(b.rope_scaling.factor, 8.0);
  EXPECT_EQ(rope_inv_freq(a), rope_inv_freq(b));
  json both = v5;  // both layouts, the same values (1e4 written as an integer in one)
  both["rope_theta"] = 500000;
  both["rope_scaling"] = kLlama3Scaling;
  EXPECT_EQ(refusal(both), "");
}

TEST(RopeLayouts, BothLayoutsWithOtherValuesAreRefused) {
  json c = base_config();
  c["rope_theta"] = 10000.0;
  c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  EXPECT_NE(refusal(c).find("field 'rope_parameters.rope_theta': 500000.0 disagrees with 'rope_theta' 10000.0 "
                            "(transformers v5 reads rope_parameters, v4 the top-level rope_theta and rope_scaling)"),
            std::string::npos)
      << refusal(c);
  // v4 reads no scaling from rope_scaling null; v5 falls back to rope_parameters' llama3.
  c = base_config();
  c["rope_theta"] = 500000.0;
  c["rope_scaling"] = nullptr;
  c["rope_parameters"] = kLlama3Scaling;
  EXPECT_NE(refusal(c).find("field 'rope_parameters.rope_type': \"llama3\" disagrees with 'rope_scaling.rope_type' "
                            "\"none\""),
            std::string::npos)
      << refusal(c);
  // A rope_theta inside rope_scaling: v5 keeps it (setdefault), v4 reads the top level.
  c = base_config();
  c["rope_theta"] = 500000.0;
  c["rope_scaling"] = kLlama3Scaling;
  c["rope_scaling"]["rope_theta"] = 1000000.0;
  EXPECT_NE(refusal(c).find("field 'rope_scaling.rope_theta': 1000000.0 disagrees with 'rope_theta' 500000.0 "
                            "(transformers v5 reads rope_scaling"),
            std::string::npos)
      << refusal(c);
}

// With rope_scaling holding something, v5 takes it whole and ignores rope_parameters, as v4
// does: a rope_parameters that says otherwise changes neither reading (round 11 found it
// refused).
TEST(RopeLayouts, ARopeParametersBesideAUsedRopeScalingIsReadByNeither) {
  json c = base_config();
  c["rope_theta"] = 500000.0;
  c["rope_scaling"] = kLlama3Scaling;
  c["rope_scaling"]["factor"] = 4.0;
  c["rope_parameters"] = kLlama3Scaling;
  c["rope_parameters"]["rope_theta"] = 10000.0;
  ASSERT_EQ(refusal(c), "");
  const ModelConfig cfg = resolve_model_config(c);
  EXPECT_EQ(cfg.rope_scaling.factor, 4.0);
  EXPECT_EQ(cfg.rope_theta, 500000.0);
}

// v5 reads partial_rotary_factor inside rope_parameters as well: refused there as at the top
// level (it ran full rotary with a plain PASS).
TEST(RopeLayouts, APartialRotaryFactorInsideRopeParametersIsRefused) {
  json c = base_config();
  c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}, {"partial_rotary_factor", 0.5}};
  const CompatResult r = check_compat(c);
  EXPECT_FALSE(r.accepted);
  EXPECT_NE(r.message.find("partial_rotary_factor 0.5 in the RoPE parameters"), std::string::npos) << r.message;
  c["rope_parameters"]["partial_rotary_factor"] = 1.0;
  EXPECT_TRUE(check_compat(c).accepted) << check_compat(c).message;
}

}  // namespace
}  // namespace llmport
