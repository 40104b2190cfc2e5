// The production path in bf16 (cpu backend, checkpoint dtype or bf16 for fp32 checkpoints):
// on every golden prompt the engine's top-1 is in the golden top-5 and the golden top-1 is
// in the engine's top-5 (the verify gate's token-set rule), at the last prompt position.
#include <algorithm>

#include "llmport/sampler.hpp"
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

void expect_top5_crossed(const std::vector<float>& logits, const std::vector<int>& golden_top5) {
  std::vector<int> mine;
  for (const auto& [id, l] : top_k_logits(logits, 5)) mine.push_back(id);
  EXPECT_TRUE(contains(golden_top5, mine[0])) << "engine top-1 " << mine[0];
  EXPECT_TRUE(contains(mine, golden_top5[0])) << "golden top-1 " << golden_top5[0];
}

TEST(GoldenBf16, CpuBackendKeepsTopFiveSets) {
  int n = 0;
  {
    const auto dir = shared_path("models/stories260K");
    const auto golden = load_json(dir / "golden/public.json");
    LoadedModel model(dir);
    auto eng = model.engine("cpu", DType::BF16);
    for (const auto& c : golden.at("cases")) {
      SCOPED_TRACE(c.at("name").get<std::string>());
      std::vector<int> want;
      for (const auto& e : c.at("steps").at(0).at("top5")) want.push_back(e.at("id").get<int>());
      expect_top5_crossed(eng->prefill(c.at("prompt_ids").get<std::vector<int>>()), want);
      ++n;
    }
  }
  for (const auto& e : std::filesystem::directory_iterator(shared_path("models/synthetic"))) {
    if (!std::filesystem::exists(e.path() / "golden.json")) continue;
    SCOPED_TRACE(e.path().filename().string());
    const auto golden = load_json(e.path() / "golden.json");
    LoadedModel model(e.path());
    auto eng = model.engine("cpu", DType::BF16);
    for (const auto& seq : golden.at("sequences")) {
      const auto ids = seq.at("input_ids").get<std::vector<int>>();
      expect_top5_crossed(eng->prefill(ids), seq.at("prompt_top5").back().at("ids").get<std::vector<int>>());
      ++n;
    }
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace llmport::test
