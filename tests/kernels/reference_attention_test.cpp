// Reference GQA attention: head mapping (TRAPS #4, 32 heads / 4 KV heads, group 8) and the
// causal mask with a cached prefix (TRAPS #10: 9 new rows over 16 positions).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "llmport/kernels.hpp"

namespace llmport {
namespace {

TEST(ReferenceAttention, GqaHeadMappingIsHeadOverGroup) {
  auto be = make_backend("reference");
  const int n_heads = 32, n_kv = 4, hd = 4, max_seq = 3, n_ctx = 1;
  // One cached position; KV head g holds V = g + 1 everywhere, so a query head's output
  // names the KV head it read.
  std::vector<float> k(static_cast<std::size_t>(n_kv * max_seq * hd), 0.5f);  // [n_kv, max_seq, hd]
  std::vector<float> v(k.size());
  for (int g = 0; g < n_kv; ++g)
    for (int i = 0; i < max_seq * hd; ++i) v[static_cast<std::size_t>(g * max_seq * hd + i)] = static_cast<float>(g + 1);
  std::vector<float> q(static_cast<std::size_t>(n_heads * hd), 1.0f);  // [1, n_heads, hd]
  std::vector<float> out(q.size());
  be->attention({.q = q.data(), .k_cache = k.data(), .v_cache = v.data(), .kv_capacity = max_seq, .start_pos = n_ctx - 1, .m = 1, .n_heads = n_heads, .n_kv_heads = n_kv, .head_dim = hd, .scale = 0.5f, .out = out.data()});
  for (int h = 0; h < n_heads; ++h)
    for (int d = 0; d < hd; ++d)
      EXPECT_FLOAT_EQ(out[static_cast<std::size_t>(h * hd + d)], static_cast<float>(h / 8 + 1))
          << "head " << h << " must read kv head " << h / 8 << " (not " << h % 4 << ")";
}

TEST(ReferenceAttention, CausalMaskWithPrefix) {
  auto be = make_backend("reference");
  const int n_kv = 2, n_heads = 4, hd = 3, max_seq = 20, start = 7, m = 9;
  // Zero queries give uniform weights over the visible positions, so row t's output is the
  // mean of V over positions 0..start+t: exactly the 9 x 16 mask of TRAPS #10.
  std::vector<float> k(static_cast<std::size_t>(n_kv * max_seq * hd), 1.0f);
  std::vector<float> v(k.size());
  for (int g = 0; g < n_kv; ++g)
    for (int j = 0; j < max_seq; ++j)
      for (int d = 0; d < hd; ++d)
        v[static_cast<std::size_t>((g * max_seq + j) * hd + d)] = static_cast<float>(j * (g + 1) + d);
  std::vector<float> q(static_cast<std::size_t>(m * n_heads * hd), 0.0f);
  std::vector<float> out(q.size());
  be->attention({.q = q.data(), .k_cache = k.data(), .v_cache = v.data(), .kv_capacity = max_seq, .start_pos = start, .m = m, .n_heads = n_heads, .n_kv_heads = n_kv, .head_dim = hd, .scale = 1.0f, .out = out.data()});
  for (int t = 0; t < m; ++t)
    for (int h = 0; h < n_heads; ++h)
      for (int d = 0; d < hd; ++d) {
        const int g = h / (n_heads / n_kv);
        const int n_ctx = start + t + 1;
        double mean = 0;
        for (int j = 0; j < n_ctx; ++j) mean += j * (g + 1) + d;
        mean /= n_ctx;
        EXPECT_NEAR(out[static_cast<std::size_t>((t * n_heads + h) * hd + d)], mean, 1e-4)
            << "t " << t << " h " << h;
      }
}

TEST(ReferenceAttention, ScoresUseScaleAndSoftmax) {
  auto be = make_backend("reference");
  // Two positions, one head, head_dim 2: scores q.k * scale = {0, 2 * 0.5}; weights softmax.
  const std::vector<float> k{0, 0, 1, 1};   // [1, 2, 2]
  const std::vector<float> v{10, 0, 0, 10};  // [1, 2, 2]
  const std::vector<float> q{1, 1};
  std::vector<float> out(2);
  be->attention({.q = q.data(), .k_cache = k.data(), .v_cache = v.data(), .kv_capacity = 2, .start_pos = 1, .m = 1, .n_heads = 1, .n_kv_heads = 1, .head_dim = 2, .scale = 0.5f, .out = out.data()});
  const double p1 = std::exp(1.0) / (1 + std::exp(1.0));
  EXPECT_NEAR(out[0], 10 * (1 - p1), 1e-5);
  EXPECT_NEAR(out[1], 10 * p1, 1e-5);
}

}  // namespace
}  // namespace llmport
