// TRAPS #10: KV cache with a prefix. For several lengths L and split points p, on every
// model: one pass over L tokens == prefill p then an (L-p)-token chunk at start_pos p ==
// prefill p then L-p single decode steps (fp32, per row <= 1e-5 relative).
#include "runtime/engine_test_util.hpp"

namespace llmport::test {
namespace {

std::vector<std::filesystem::path> all_models() {
  std::vector<std::filesystem::path> dirs{shared_path("models/stories260K")};
  for (const auto& e : std::filesystem::directory_iterator(shared_path("models/synthetic")))
    if (std::filesystem::exists(e.path() / "config.json")) dirs.push_back(e.path());
  return dirs;
}

// Per-row max |a - b| relative to the row's largest |b| (at least 1).
void expect_rows_close(const std::vector<float>& a, const std::vector<float>& b, int vocab,
                       const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t r = 0; r < a.size() / static_cast<std::size_t>(vocab); ++r) {
    double mx = 1, d = 0;
    for (int i = 0; i < vocab; ++i) {
      const std::size_t j = r * vocab + i;
      mx = std::max(mx, std::fabs(static_cast<double>(b[j])));
      d = std::max(d, std::fabs(static_cast<double>(a[j]) - b[j]));
    }
    EXPECT_LE(d, 1e-5 * mx) << what << " row " << r;
  }
}

class KvCacheSplit : public ::testing::TestWithParam<std::string> {};

TEST_P(KvCacheSplit, OnePassEqualsChunkEqualsDecodes) {
  int n_checked = 0;
  for (const auto& dir : all_models()) {
    SCOPED_TRACE(dir.filename().string());
    LoadedModel model(dir);
    auto eng = model.engine(GetParam(), DType::F32);
    const int vocab = model.cfg.vocab_size;
    for (const auto& [L, p] : std::vector<std::pair<int, int>>{{16, 7}, {2, 1}, {9, 8}, {40, 13}}) {
      SCOPED_TRACE("L=" + std::to_string(L) + " p=" + std::to_string(p));
      std::vector<int> ids(static_cast<std::size_t>(L));
      for (int i = 0; i < L; ++i) ids[static_cast<std::size_t>(i)] = (i * 37 + 5) % vocab;
      const std::span<const int> all(ids);

      eng->reset();
      const auto one = eng->forward(all, true);  // [L, vocab]
      ASSERT_EQ(eng->pos(), L);

      eng->reset();
      auto chunked = eng->forward(all.first(static_cast<std::size_t>(p)), true);
      const auto rest = eng->forward(all.subspan(static_cast<std::size_t>(p)), true);
      chunked.insert(chunked.end(), rest.begin(), rest.end());
      expect_rows_close(chunked, one, vocab, "prefill + chunk");

      eng->reset();
      auto stepped = eng->forward(all.first(static_cast<std::size_t>(p)), true);
      for (int t = p; t < L; ++t) {
        const auto row = eng->decode_step(ids[static_cast<std::size_t>(t)]);
        stepped.insert(stepped.end(), row.begin(), row.end());
      }
      expect_rows_close(stepped, one, vocab, "prefill + decodes");
      ++n_checked;
    }
  }
  EXPECT_GT(n_checked, 0);
}

TEST_P(KvCacheSplit, TruncateAndRecomputeMatches) {
  LoadedModel model(shared_path("models/stories260K"));
  auto eng = model.engine(GetParam());
  const std::vector<int> ids{1, 403, 407, 261, 378, 432, 383};
  const auto full = eng->prefill(ids);
  eng->prefill(std::span<const int>(ids).first(3));
  eng->forward(std::vector<int>{5, 6});  // wrong continuation, then rewind
  eng->truncate(3);
  EXPECT_EQ(eng->pos(), 3);
  const auto again = eng->forward(std::span<const int>(ids).subspan(3));
  EXPECT_LE(max_abs_diff(again, full), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Backends, KvCacheSplit, ::testing::ValuesIn(test_backends()));

}  // namespace
}  // namespace llmport::test
