// An untied model's embedding table is looked up in place in the checkpoint's mapping, one
// row per new token. From a cold page cache each such lookup was a disk read (tinyllama-1.1b:
// 4.7 ms per decode token, 7% of it), so the engine reads the table in at load
// (touch_source_pages). Checked with the page cache itself: the copied checkpoint is evicted
// (POSIX_FADV_DONTNEED), then every page of the table must be resident once the engine is
// built (mincore), and only then.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "llmport/architecture.hpp"
#include "llmport/model_config.hpp"
#include "llmport/synth.hpp"
#include "llmport/engine.hpp"
#include "llmport/tensor.hpp"
#include "llmport/weights.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {
namespace fs = std::filesystem;

// Share of the pages of [data, data + n) the page cache holds.
double resident_share(const void* data, std::size_t n) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const auto b = reinterpret_cast<std::uintptr_t>(data) / page * page;
  const std::size_t len = reinterpret_cast<std::uintptr_t>(data) + n - b;
  std::vector<unsigned char> v((len + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(b), len, v.data()) != 0) return -1;
  std::size_t in = 0;
  for (unsigned char c : v) in += c & 1;
  return static_cast<double>(in) / static_cast<double>(v.size());
}

void evict(const fs::path& f) {
  const int fd = ::open(f.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << f;
  ASSERT_EQ(::fdatasync(fd), 0);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
}

// tiny-mistral (untied, fp32) with a 65536-token vocabulary: a 16 MiB table, far beyond what
// the kernel's readahead around the header fetches (the shared tiny models fit in it whole).
TEST(EmbeddingResidency, AnUntiedTableIsReadInAtLoad) {
  TempDir t;
  SynthOptions so;
  so.preset = "tiny-mistral";
  so.out = t.path() / "m";
  so.vocab_size = 65536;
  write_synthetic_model(so);
  evict(so.out / "model.safetensors");
  const ModelConfig cfg = load_model_config(so.out);
  ASSERT_FALSE(cfg.tie_word_embeddings);
  const WeightStore weights = WeightStore::open(so.out, cfg);
  const TensorView& embed = weights.get(TensorRole::Embed);
  ASSERT_FALSE(embed.file.empty());
  ASSERT_GE(embed.nbytes, std::size_t{16} << 20);
  // The eviction took, so the check below can fail: a table the page cache held anyway
  // would pass without the engine reading it.
  ASSERT_LT(resident_share(embed.data, embed.nbytes), 0.5);
  EngineOptions opt;
  opt.backend = "cpu";
  opt.threads = 1;
  Engine engine(cfg, weights, opt);
  EXPECT_EQ(resident_share(embed.data, embed.nbytes), 1.0);
  EXPECT_EQ(engine.embedding_table_bytes(), embed.nbytes);
}

}  // namespace
}  // namespace llmport::test
