// Every synthetic model under models/synthetic/*/golden.json (Llama-3 rope scaling + tied,
// Qwen2 QKV bias, Qwen3 q/k norm with head_dim != emb/heads, Mistral MHA): last-position
// logits within 2e-3, per-layer hidden cosine >= 0.9999, greedy continuations equal, fp32 math.
#include <set>

#include "llmport/generate.hpp"
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace {

class SyntheticGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(SyntheticGolden, AllModelsAllSequences) {
  int n_models = 0;
  for (const auto& entry : std::filesystem::directory_iterator(shared_path("models/synthetic"))) {
    const auto gpath = entry.path() / "golden.json";
    if (!std::filesystem::exists(gpath)) continue;
    SCOPED_TRACE(entry.path().filename().string());
    const auto golden = load_json(gpath);
    LoadedModel model(entry.path());
    // fp32 compute: bf16-stored weights widen exactly, as the golden's reference did.
    auto eng = model.engine(GetParam(), DType::F32);
    const int n_new = golden.at("max_new_tokens").get<int>();
    for (const auto& seq : golden.at("sequences")) {
      SCOPED_TRACE("length " + std::to_string(seq.at("length").get<int>()));
      const auto ids = seq.at("input_ids").get<std::vector<int>>();
      LastRowProbe probe;
      eng->set_probe(probe.fn());
      const auto logits = eng->prefill(ids);
      eng->set_probe({});
      EXPECT_LE(max_abs_diff(logits, seq.at("last_logits").get<std::vector<float>>()), 2e-3);
      EXPECT_GE(cosine(probe.rows["embedding:-1"], seq.at("embedding_last").get<std::vector<float>>()),
                0.9999);
      const auto& layers = seq.at("layer_hidden_last");
      ASSERT_EQ(static_cast<int>(layers.size()), model.cfg.n_layers);
      for (int il = 0; il < model.cfg.n_layers; ++il)
        EXPECT_GE(cosine(probe.rows["layer_out:" + std::to_string(il)],
                         layers[static_cast<std::size_t>(il)].get<std::vector<float>>()),
                  0.9999)
            << "layer " << il;
      EXPECT_GE(cosine(probe.rows["final_norm:-1"],
                       seq.at("final_norm_hidden_last").get<std::vector<float>>()),
                0.9999);

      GenerateOptions opt;
      opt.n_tokens = n_new;
      opt.ignore_stop = true;
      opt.record_top = 5;
      const auto r = generate(*eng, ids, opt);
      const auto& greedy = seq.at("greedy");
      EXPECT_EQ(r.generated_ids, greedy.at("tokens").get<std::vector<int>>());
      const auto& steps = greedy.at("steps_top5");
      ASSERT_EQ(r.steps.size(), steps.size());
      for (std::size_t i = 0; i < steps.size(); ++i) {
        std::set<int> got, want;
        for (const auto& [id, l] : r.steps[i].top) got.insert(id);
        for (int id : steps[i].at("ids")) want.insert(id);
        EXPECT_EQ(got, want) << "step " << i;
      }
    }
    ++n_models;
  }
  EXPECT_GT(n_models, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, SyntheticGolden, ::testing::ValuesIn(test_backends()));

}  // namespace
}  // namespace llmport::test
