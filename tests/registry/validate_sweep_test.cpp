// validate_kernels / sweep_kernels / record_validation on a small model config, and the
// kernel cache (content-hash keyed packed weights).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu_test_util.hpp"
#include "llmport/error.hpp"
#include "llmport/kernel_cache.hpp"
#include "llmport/registry.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.architecture = "Qwen3ForCausalLM";
  c.model_type = "qwen3";
  c.n_layers = 1;
  c.emb_dim = 96;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 32;  // != emb / heads, as Qwen3
  c.hidden_dim = 136;
  c.vocab_size = 77;
  c.max_position_embeddings = 64;
  c.max_seq = 64;
  c.qk_norm = true;
  return c;
}

TEST(Validate, EveryKernelShapeOfTheModelPassesOnEachIsa) {
  const ModelConfig cfg = small_config();
  const auto shapes = model_kernel_shapes(cfg, 19);
  std::set<std::string> kernels;
  for (const auto& [k, s] : shapes) kernels.insert(k);
  EXPECT_EQ(kernels, (std::set<std::string>{"gemm", "gemv", "rmsnorm", "rope", "swiglu", "add",
                                            "attention_prefill", "attention_decode"}));
  int rows_checked = 0;
  for (cpu::Isa isa : cpu::supported_isas())
    for (DType dt : {DType::BF16, DType::F32}) {
      auto be = cpu::make_cpu_backend_isa(2, isa);
      const auto rows = validate_kernels(cfg, dt, *be, nullptr, 19);
      ASSERT_EQ(rows.size(), shapes.size());
      for (const auto& r : rows) {
        EXPECT_TRUE(r.pass) << cpu::isa_name(isa) << " " << r.kernel << " " << shape_string(r.shape)
                            << " max_abs " << r.max_abs_err;
        EXPECT_GT(r.n_checked, 0);
        EXPECT_EQ(r.atol, kernel_tolerance(r.kernel, dt).first);
        if (r.kernel == "gemm" || r.kernel == "gemv") {
          EXPECT_FALSE(r.config.empty());
        }
        ++rows_checked;
      }
    }
  EXPECT_GT(rows_checked, 0);
}

TEST(Validate, RecordsValidatedRowsWithUsedBy) {
  TempDir dir;
  const ModelConfig cfg = small_config();
  auto be = make_backend("cpu", 1);
  const auto rows = validate_kernels(cfg, DType::BF16, *be, nullptr, 8);
  KernelRegistry reg(dir.path() / "none", dir.path() / "reg");
  record_validation(rows, DType::BF16, be->isa(), reg, "small", 1);
  reg.save();
  KernelRegistry again(dir.path() / "none", dir.path() / "reg");
  const auto* e = again.find("gemv", "bf16", be->isa(), {{"n", 77}, {"k", 96}});
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->validated);
  EXPECT_TRUE(e->heuristic);
  EXPECT_EQ(e->used_by, std::vector<std::string>{"small"});
  EXPECT_EQ(again.entries().size(), rows.size());
}

TEST(Sweep, RecordsAllCandidatesAndTheFastestPassingBest) {
  TempDir dir;
  const ModelConfig cfg = small_config();
  KernelRegistry reg(dir.path() / "none", dir.path() / "reg");
  const auto es = sweep_kernels(cfg, DType::BF16, true, reg, "small", 1, 24, 1);
  ASSERT_FALSE(es.empty());
  auto be = make_backend("cpu", 1);
  const auto isa = cpu::parse_isa(be->isa());
  for (const auto& e : es) {
    EXPECT_EQ(e.kernel, "gemm");
    EXPECT_EQ(e.shape.at("m"), 24);
    EXPECT_EQ(e.candidates.size(), cpu::candidate_tile_configs(isa, DType::BF16, true).size());
    double best = 0, best_listed = -1;
    for (const auto& c : e.candidates) {
      EXPECT_TRUE(c.pass);
      EXPECT_GT(c.gflops, 0);
      EXPECT_LT(c.mean_rel_l1, 1e-2);
      best = std::max(best, c.gflops);
      if (c.config == e.best) best_listed = c.gflops;
    }
    EXPECT_EQ(best_listed, best);
    EXPECT_EQ(e.used_by, std::vector<std::string>{"small"});
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "reg" / "gemm_bf16.json"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "reg" / "supported_kernels.md"));
  // The engine's selection now finds the measured config, no heuristic needed.
  KernelRegistry reg2(dir.path() / "none", dir.path() / "reg");
  sweep_kernels(cfg, DType::BF16, false, reg2, "small", 1, 24, 1);
  KernelSelection sel;
  sel.prefill_m = 24;
  sel.registry = std::make_shared<KernelRegistry>(dir.path() / "none", dir.path() / "reg");
  sel.allow_heuristic = false;
  EXPECT_NO_THROW(sel.linear_config(*be, cfg.n_heads * cfg.head_dim, cfg.emb_dim, DType::BF16));
  EXPECT_TRUE(sel.heuristic_used.empty());
}

TEST(KernelCache, WritesOnceLoadsLaterAndInvalidatesOnChange) {
  TempDir dir;
  auto be = make_backend("cpu", 1);
  std::vector<float> w(40 * 33);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<float>(i));
  KernelCache cache(dir.path());
  const TileConfig cfg = {{"mr", 4}};
  bool hit = true;
  auto a = cache.get_or_pack(*be, view_of(w, 40, 33), DType::BF16, cfg, &hit);
  EXPECT_FALSE(hit);
  auto b = cache.get_or_pack(*be, view_of(w, 40, 33), DType::BF16, cfg, &hit);
  EXPECT_TRUE(hit);
  // Loaded bytes give the same outputs as the freshly packed weight.
  std::vector<float> x(33, 0.5f), ya(40), yb(40);
  be->linear(*a, x.data(), 1, ya.data());
  be->linear(*b, x.data(), 1, yb.data());
  EXPECT_EQ(ya, yb);
  // Another config, dtype or changed weight bytes is another key: a miss, never stale data.
  cache.get_or_pack(*be, view_of(w, 40, 33), DType::BF16, {{"mr", 6}}, &hit);
  EXPECT_FALSE(hit);
  cache.get_or_pack(*be, view_of(w, 40, 33), DType::F32, cfg, &hit);
  EXPECT_FALSE(hit);
  w[7] += 1.0f;
  EXPECT_NE(KernelCache::key(view_of(w, 40, 33), DType::BF16, cfg, "cpu"),
            [&] { auto w2 = w; w2[7] -= 1.0f; return KernelCache::key(view_of(w2, 40, 33), DType::BF16, cfg, "cpu"); }());
  cache.get_or_pack(*be, view_of(w, 40, 33), DType::BF16, cfg, &hit);
  EXPECT_FALSE(hit);
  // A truncated file is repacked, not trusted.
  const auto file = dir.path() / KernelCache::key(view_of(w, 40, 33), DType::BF16, cfg, "cpu");
  ASSERT_TRUE(std::filesystem::exists(file));
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 10);
  auto c = cache.get_or_pack(*be, view_of(w, 40, 33), DType::BF16, cfg, &hit);
  EXPECT_FALSE(hit);
  cache.get_or_pack(*be, view_of(w, 40, 33), DType::BF16, cfg, &hit);
  EXPECT_TRUE(hit);
}

TEST(KernelCache, ContentHashDependsOnEveryByte) {
  std::vector<unsigned char> a(1000, 3);
  const std::string h0 = content_hash(a.data(), a.size());
  EXPECT_EQ(h0.size(), 16u);
  for (std::size_t i : {std::size_t{0}, std::size_t{31}, std::size_t{500}, std::size_t{999}}) {
    auto b = a;
    b[i] ^= 1;
    EXPECT_NE(content_hash(b.data(), b.size()), h0) << i;
  }
  EXPECT_NE(content_hash(a.data(), 999), h0);
}

}  // namespace
}  // namespace llmport::test
