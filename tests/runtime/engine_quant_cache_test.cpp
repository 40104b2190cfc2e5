// A quantized model through the kernel selection: the second load reads every packed
// weight (q4_0 blocks and the fp32 ones kept) from the kernel cache and gives the first
// load's logits bit for bit.
#include <cstring>

#include "llmport/registry.hpp"
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace {

TEST(EngineQuantCache, ASecondLoadOfAQuantizedModelIsAllCacheHits) {
  const LoadedModel m(shared_path("models/stories260K"));
  TempDir dir;
  auto load = [&] {
    EngineOptions o;
    o.backend = "cpu";
    o.threads = 2;
    o.quant = QuantType::Q4_0;
    o.kernels = std::make_shared<KernelSelection>();
    o.kernels->cache_dir = dir.path();
    auto e = std::make_unique<Engine>(m.cfg, *m.weights, o);
    return std::pair{std::move(e), o.kernels};
  };
  // stories260K: 5 layers x 7 projections (down_proj, k = 172, stays fp32) + tied lm_head.
  const int linears = m.cfg.n_layers * 7 + 1;
  auto [first, sel1] = load();
  EXPECT_EQ(sel1->cache_hits, 0);
  EXPECT_EQ(sel1->cache_misses, linears);
  auto [second, sel2] = load();
  EXPECT_EQ(sel2->cache_hits, linears);
  EXPECT_EQ(sel2->cache_misses, 0);
  // 6 quantized projections per layer, q4_0 with its act.
  EXPECT_EQ(sel2->chosen.count("q4_0 n=64 k=64"), 1u);
  const std::vector<int> prompt = {1, 403, 407, 261, 378};
  const auto a = first->forward(prompt), b = second->forward(prompt);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace llmport::test
