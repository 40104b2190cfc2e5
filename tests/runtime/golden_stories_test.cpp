// stories260K (real trained Llama, fp32) against golden/public.json: prompt ids through the
// engine, final-position logits (1e-4), per-layer hidden states (cosine >= 0.9999), and the
// 32-step greedy continuation with per-step top-5 id sets — for every case in the file.
#include <set>

#include "llmport/generate.hpp"
#include "llmport/sampler.hpp"
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace {

std::set<int> top5_ids(const nlohmann::json& top5) {
  std::set<int> s;
  for (const auto& e : top5) s.insert(e["id"].get<int>());
  return s;
}

class StoriesGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(StoriesGolden, AllCasesMatch) {
  const auto dir = shared_path("models/stories260K");
  const auto golden = load_json(dir / "golden/public.json");
  LoadedModel model(dir);
  auto eng = model.engine(GetParam());
  ASSERT_EQ(eng->dtype(), DType::F32);
  int n_cases = 0;
  for (const auto& c : golden.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto prompt = c.at("prompt_ids").get<std::vector<int>>();
    const auto want_ids = c.at("generated_ids").get<std::vector<int>>();
    const auto& steps = c.at("steps");

    LastRowProbe probe;
    eng->set_probe(probe.fn());
    const auto logits = eng->prefill(prompt);
    eng->set_probe({});
    EXPECT_LE(max_abs_diff(logits, c.at("prompt_last_logits").get<std::vector<float>>()), 1e-4);
    const auto& hs = c.at("hidden_states_last_position");
    EXPECT_GE(cosine(probe.rows["embedding:-1"], hs.at("embedding").get<std::vector<float>>()), 0.9999);
    const auto& layers = hs.at("layer_outputs");
    ASSERT_EQ(static_cast<int>(layers.size()), model.cfg.n_layers);
    for (int il = 0; il < model.cfg.n_layers; ++il) {
      const auto want = layers[static_cast<std::size_t>(il)].get<std::vector<float>>();
      EXPECT_GE(cosine(probe.rows["layer_out:" + std::to_string(il)], want), 0.9999) << "layer " << il;
      EXPECT_LE(max_abs_diff(probe.rows["layer_out:" + std::to_string(il)], want), 1e-4) << "layer " << il;
    }
    EXPECT_GE(cosine(probe.rows["final_norm:-1"], hs.at("final_norm").get<std::vector<float>>()), 0.9999);

    GenerateOptions opt;
    opt.n_tokens = static_cast<int>(want_ids.size());
    opt.ignore_stop = true;
    opt.record_top = 5;
    const auto r = generate(*eng, prompt, opt);
    EXPECT_EQ(r.generated_ids, want_ids);
    ASSERT_EQ(r.steps.size(), steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      std::set<int> got;
      for (const auto& [id, l] : r.steps[i].top) got.insert(id);
      EXPECT_EQ(got, top5_ids(steps[i].at("top5"))) << "step " << i;
      EXPECT_NEAR(r.steps[i].top[0].second, steps[i].at("top5")[0].at("logit").get<double>(), 1e-4)
          << "step " << i;
    }
    ++n_cases;
  }
  EXPECT_GT(n_cases, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoriesGolden, ::testing::ValuesIn(test_backends()));

}  // namespace
}  // namespace llmport::test
