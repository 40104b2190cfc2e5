// FaultInjection: parsing and the effect of each planted fault (what verify's gates must see).
#include "llmport/error.hpp"
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace {
using K = FaultInjection::Kind;

TEST(FaultInjection, Parse) {
  auto f = FaultInjection::parse("rope_interleaved@2");
  EXPECT_EQ(f.kind, K::RopeInterleaved);
  EXPECT_EQ(f.layer, 2);
  f = FaultInjection::parse("wrong_rope_theta@1=4");
  EXPECT_EQ(f.kind, K::WrongRopeTheta);
  EXPECT_EQ(f.layer, 1);
  EXPECT_DOUBLE_EQ(f.value, 4.0);
  f = FaultInjection::parse("logit_scale=1.5");
  EXPECT_EQ(f.kind, K::LogitScale);
  EXPECT_DOUBLE_EQ(f.value, 1.5);
  EXPECT_EQ(FaultInjection::parse("kv_off_by_one").kind, K::KvOffByOne);
  EXPECT_EQ(FaultInjection::parse("drop_qkv_bias@0").kind, K::DropQkvBias);
  EXPECT_EQ(FaultInjection::parse("skip_qk_norm@1").kind, K::SkipQkNorm);
  EXPECT_THROW(FaultInjection::parse("rope_sideways"), UsageError);
  EXPECT_THROW(FaultInjection::parse("rope_interleaved@x"), UsageError);
  EXPECT_THROW(FaultInjection::parse("logit_scale=abc"), UsageError);
  EXPECT_THROW(FaultInjection::parse("logit_scale=-1"), UsageError);
  // Empty parts and parts the kind does not take: each would be recorded as the planted
  // fault while planting something else.
  const std::pair<const char*, const char*> refused[] = {
      {"rope_interleaved@", "fault 'rope_interleaved@': '@' without a layer index"},
      {"logit_scale=", "fault 'logit_scale=': '=' without a value"},
      {"rope_interleaved@1=3", "fault 'rope_interleaved@1=3': rope_interleaved takes no value"},
      {"kv_off_by_one@2", "fault 'kv_off_by_one@2': kv_off_by_one takes no layer (it applies to every layer)"},
      {"logit_scale@0=2", "fault 'logit_scale@0=2': logit_scale takes no layer (it applies to every layer)"},
      {"none@3=1", "fault 'none@3=1': none takes no layer (it applies to nothing)"},
      {"none=1", "fault 'none=1': none takes no value"},
  };
  for (const auto& [spec, msg] : refused) {
    try {
      FaultInjection::parse(spec);
      ADD_FAILURE() << spec << " accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), msg);
    }
  }
  EXPECT_DOUBLE_EQ(FaultInjection::parse("proj_scale@0=2").value, 2.0);
}

FaultInjection fault(K k, int layer = 0, double value = 0) {
  FaultInjection f;
  f.kind = k;
  f.layer = layer;
  f.value = value;
  return f;
}

TEST(FaultInjection, LayerFaultsChangeOnlyFromTheirLayerOn) {
  LoadedModel model(shared_path("models/synthetic/qwen3-tiny"));
  const std::vector<int> ids{5, 6, 7, 8, 9, 10};
  auto capture = [&](FaultInjection f) {
    auto eng = model.engine("reference", {}, f);
    LastRowProbe p;
    eng->set_probe(p.fn());
    eng->prefill(ids);
    return p.rows;
  };
  const auto clean = capture({});
  for (K k : {K::RopeInterleaved, K::SkipQkNorm, K::WrongRopeTheta}) {
    const auto bad = capture(fault(k, 1));
    EXPECT_EQ(bad.at("layer_out:0"), clean.at("layer_out:0")) << static_cast<int>(k);
    EXPECT_GT(max_abs_diff(bad.at("layer_out:1"), clean.at("layer_out:1")), 1e-3) << static_cast<int>(k);
  }
  EXPECT_THROW(model.engine("reference", {}, fault(K::SkipQkNorm, model.cfg.n_layers)), UsageError);
}

TEST(FaultInjection, LogitScaleScalesEveryLogit) {
  LoadedModel model(shared_path("models/stories260K"));
  const std::vector<int> ids{1, 403, 407};
  const auto clean = model.engine("reference")->prefill(ids);
  const auto scaled = model.engine("reference", {}, fault(K::LogitScale))->prefill(ids);
  ASSERT_EQ(clean.size(), scaled.size());
  for (std::size_t i = 0; i < clean.size(); ++i) EXPECT_FLOAT_EQ(scaled[i], clean[i] * 1.25f);
}

TEST(FaultInjection, KvOffByOneHitsDecodeOnly) {
  LoadedModel model(shared_path("models/stories260K"));
  const std::vector<int> ids{1, 403, 407, 261};
  auto clean = model.engine("reference");
  auto bad = model.engine("reference", {}, fault(K::KvOffByOne));
  EXPECT_EQ(bad->prefill(ids), clean->prefill(ids));
  EXPECT_GT(max_abs_diff(bad->decode_step(378), clean->decode_step(378)), 1e-3);
}

}  // namespace
}  // namespace llmport::test
