// Once an engine is built, the checkpoint's mapping holds no resident page of a tied model:
// every weight was copied (packed, or widened to fp32 for norms) and its source pages
// dropped. Where the kernel maps a whole 2 MiB folio on a fault, a norm vector read in place
// used to leave its neighbourhood of packed weights resident (qwen3-0.6b: 136 MiB, over the
// bench memory budget). Measured as the Rss of the mapping in /proc/self/smaps.
#include <gtest/gtest.h>

#include <cstddef>
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
  // tiny-qwen3 (tied, q/k norms) widened so the file spans several 2 MiB folios: a 512 KiB
  // embedding first, then two 3.2 MiB layers. Layer 1's norm vectors lie 2 MiB and more
  // past the embedding, so only releasing them after their copy (load_vec) drops the pages
  // reading them mapped; the tied lm_head, packed last, sweeps just the embedding's span.
  SynthPreset preset = synth_preset("tiny-qwen3");
  preset.config["hidden_size"] = 256;
  preset.config["intermediate_size"] = 2048;
  preset.config["vocab_size"] = 1024;
  TempDir t;
  SynthOptions so;
  so.out = t.path() / "m";
  write_synthetic_model(so, preset);
  const ModelConfig cfg = load_model_config(so.out);
  ASSERT_TRUE(cfg.tie_word_embeddings);
  ASSERT_EQ(cfg.n_layers, 2);
  const WeightStore weights = WeightStore::open(so.out, cfg);
  const TensorView& embed = weights.get(TensorRole::Embed);
  const TensorView& norm = weights.get(TensorRole::AttnNorm, 1);
  ASSERT_NE(norm.map_base, nullptr);
  const auto at = [&](const TensorView& v) {
    return static_cast<const char*>(v.data) - static_cast<const char*>(v.map_base);
  };
  ASSERT_GE(at(norm), at(embed) + static_cast<std::ptrdiff_t>(embed.nbytes) + (std::ptrdiff_t{2} << 20))
      << "the layout this test relies on changed";
  EngineOptions opt;
  opt.backend = "cpu";
  opt.threads = 1;
  opt.dtype = DType::BF16;
  Engine engine(cfg, weights, opt);
  EXPECT_EQ(rss_kib_of(norm.data), 0) << smaps_line(norm.data, "Rss:");
}

}  // namespace
}  // namespace llmport::test
