// Once an engine is built, the checkpoint's mapping holds no resident page of a tied model:
// every weight was copied (packed, or widened to fp32 for norms) and its source pages
// dropped. Where the kernel maps a whole 2 MiB folio on a fault, a norm vector read in place
// used to leave its neighbourhood of packed weights resident (qwen3-0.6b: 136 MiB, over the
// bench memory budget). Measured as the Rss of the mapping in /proc/self/smaps.
#include <gtest/gtest.h>

#include <string>

#include "llmport/architecture.hpp"
#include "llmport/engine.hpp"
#include "llmport/model_config.hpp"
#include "llmport/synth.hpp"
#include "llmport/tensor.hpp"
#include "llmport/weights.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {

// kB of the mapping containing `p` resident in this process.
long rss_kib_of(const void* p) {
  const std::string line = smaps_line(p, "Rss:");
  return line.empty() ? -1 : std::stol(line.substr(4));
}

TEST(SourceRelease, ATiedModelLeavesNoCheckpointPageResident) {
  TempDir t;
  SynthOptions so;
  so.preset = "tiny-qwen3";  // tied, with q/k norms: many small tensors between the linears
  so.out = t.path() / "m";
  so.vocab_size = 65536;  // an 8 MiB table: the file spans several 2 MiB folios
  write_synthetic_model(so);
  const ModelConfig cfg = load_model_config(so.out);
  ASSERT_TRUE(cfg.tie_word_embeddings);
  const WeightStore weights = WeightStore::open(so.out, cfg);
  const TensorView& norm = weights.get(TensorRole::AttnNorm, 0);
  ASSERT_NE(norm.map_base, nullptr);
  EngineOptions opt;
  opt.backend = "cpu";
  opt.threads = 1;
  opt.dtype = DType::BF16;
  Engine engine(cfg, weights, opt);
  EXPECT_EQ(rss_kib_of(norm.data), 0) << smaps_line(norm.data, "Rss:");
}

}  // namespace
}  // namespace llmport::test
