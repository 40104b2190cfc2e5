// Kernel registry: JSON round trip, exact lookup and its helpful miss, writable-first
// layering, read-only shipped data, generated supported_kernels.md, kernel selection.
#include <gtest/gtest.h>

#include <fstream>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"
#include "llmport/registry.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {

RegistryEntry entry(const std::string& kernel, KernelShape shape, TileConfig best, double gflops) {
  RegistryEntry e;
  e.kernel = kernel;
  e.dtype = "bf16";
  e.isa = "avx512bf16";
  e.shape = std::move(shape);
  e.best = best;
  Candidate c;
  c.config = best;
  c.gflops = gflops;
  c.mean_rel_l1 = 1e-4;
  e.candidates.push_back(c);
  e.used_by = {"m1"};
  e.provenance = Provenance::current(2);
  return e;
}

TEST(Registry, RoundTripsThroughJsonFiles) {
  TempDir dir;
  {
    KernelRegistry reg(dir.path() / "none", dir.path() / "w");
    reg.record(entry("gemm", {{"m", 512}, {"n", 2048}, {"k", 2048}}, {{"mr", 8}, {"np", 2}}, 321.5));
    reg.save();
  }
  KernelRegistry again(dir.path() / "none", dir.path() / "w");
  const auto* e = again.find("gemm", "bf16", "avx512bf16", {{"m", 512}, {"n", 2048}, {"k", 2048}});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->best.at("mr"), 8);
  EXPECT_DOUBLE_EQ(e->best_throughput(), 321.5);
  EXPECT_EQ(e->used_by, std::vector<std::string>{"m1"});
  EXPECT_FALSE(e->provenance.compiler.empty());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "w" / "gemm_bf16.json"));
  const std::string md = read_file(dir.path() / "w" / "supported_kernels.md");
  EXPECT_NE(md.find("| gemm | bf16 | avx512bf16 | k=2048 m=512 n=2048 | mr=8 np=2 | 321.5 GFLOP/s"),
            std::string::npos)
      << md;
}

TEST(Registry, ExactLookupMissListsNearestAndCommand) {
  TempDir dir;
  KernelRegistry reg(dir.path() / "none", dir.path() / "w");
  reg.record(entry("gemv", {{"n", 2048}, {"k", 2048}}, {{"gnp", 4}}, 0));
  reg.record(entry("gemv", {{"n", 256}, {"k", 2048}}, {{"gnp", 2}}, 0));
  EXPECT_EQ(reg.find("gemv", "bf16", "avx512bf16", {{"n", 2048}, {"k", 2047}}), nullptr);
  try {
    reg.lookup("gemv", "bf16", "avx512bf16", {{"n", 2000}, {"k", 2048}});
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("k=2048 n=2000"), std::string::npos) << msg;
    // Nearest first: n=2048 is closer to 2000 than n=256.
    EXPECT_LT(msg.find("k=2048 n=2048"), msg.find("k=2048 n=256")) << msg;
    EXPECT_NE(msg.find("llmport kernels sweep"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--decode"), std::string::npos) << msg;
  }
}

TEST(Registry, WritableShadowsShippedAndShippedIsReadOnly) {
  TempDir dir;
  const KernelShape s{{"n", 64}, {"k", 64}};
  {
    KernelRegistry shipped_writer(dir.path() / "none", dir.path() / "shipped");
    shipped_writer.record(entry("gemv", s, {{"gnp", 1}}, 0));
    shipped_writer.save();
  }
  KernelRegistry ro(dir.path() / "shipped", std::nullopt);
  ASSERT_NE(ro.find("gemv", "bf16", "avx512bf16", s), nullptr);
  EXPECT_THROW(ro.record(entry("gemv", s, {{"gnp", 2}}, 0)), UsageError);
  EXPECT_THROW(ro.save(), UsageError);
  KernelRegistry layered(dir.path() / "shipped", dir.path() / "mine");
  layered.record(entry("gemv", s, {{"gnp", 4}}, 0));
  EXPECT_EQ(layered.find("gemv", "bf16", "avx512bf16", s)->best.at("gnp"), 4);
  EXPECT_EQ(layered.entries().size(), 1u);
}

TEST(Registry, MalformedFileIsAClearError) {
  TempDir dir;
  write_file(dir.path() / "gemm_bf16.json", "{\"kernel\": \"gemm\", \"dtype\": \"bf16\", \"entries\": [{}]}");
  try {
    KernelRegistry reg(dir.path(), std::nullopt);
    FAIL() << "no throw";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gemm_bf16.json"), std::string::npos) << e.what();
  }
  write_file(dir.path() / "gemm_bf16.json", "{not json");
  EXPECT_THROW(KernelRegistry(dir.path(), std::nullopt), ConfigError);
}

TEST(Registry, ToleranceTableOfIssue6) {
  EXPECT_EQ(kernel_tolerance("gemv", DType::BF16), std::make_pair(1e-3, 1.6e-2));
  EXPECT_EQ(kernel_tolerance("gemm", DType::F16), std::make_pair(1.5e-3, 1.6e-2));
  EXPECT_EQ(kernel_tolerance("rmsnorm", DType::BF16), std::make_pair(5e-2, 1.6e-2));
  EXPECT_EQ(kernel_tolerance("rope", DType::BF16), std::make_pair(5e-2, 1.6e-2));
  EXPECT_EQ(kernel_tolerance("add", DType::BF16), std::make_pair(5e-2, 1.6e-2));
  EXPECT_EQ(kernel_tolerance("swiglu", DType::BF16), std::make_pair(8e-2, 1.6e-2));
  EXPECT_EQ(kernel_tolerance("attention_decode", DType::BF16), std::make_pair(1e-1, 1.6e-2));
  EXPECT_EQ(kernel_tolerance("attention_prefill", DType::F32), std::make_pair(1e-4, 1e-4));
}

TEST(Registry, SelectionUsesMeasuredConfigElseHeuristicElseThrows) {
  TempDir dir;
  auto be = make_backend("cpu", 1);
  auto reg = std::make_shared<KernelRegistry>(dir.path() / "none", dir.path() / "w");
  RegistryEntry g = entry("gemm", {{"m", 64}, {"n", 96}, {"k", 80}}, {{"mr", 5}, {"np", 1}}, 10);
  g.isa = be->isa();
  reg->record(g);
  RegistryEntry v = entry("gemv", {{"n", 96}, {"k", 80}}, {{"gnp", 1}}, 0);
  v.isa = be->isa();
  reg->record(v);
  KernelSelection sel;
  sel.registry = reg;
  sel.prefill_m = 64;
  const TileConfig c = sel.linear_config(*be, 96, 80, DType::BF16);
  EXPECT_EQ(c.at("mr"), 5);
  EXPECT_EQ(c.at("gnp"), 1);
  EXPECT_TRUE(sel.heuristic_used.empty());
  // Unmeasured shape: heuristic when allowed (and recorded), an error otherwise.
  const TileConfig h = sel.linear_config(*be, 100, 80, DType::BF16);
  EXPECT_EQ(h, cpu::default_tile_config(cpu::parse_isa(be->isa()), DType::BF16, 100, 80));
  EXPECT_EQ(sel.heuristic_used.size(), 2u);  // its gemm and gemv
  sel.allow_heuristic = false;
  EXPECT_THROW(sel.linear_config(*be, 100, 80, DType::BF16), UsageError);
  // The reference backend takes no tile config.
  auto ref = make_backend("reference");
  EXPECT_TRUE(sel.linear_config(*ref, 100, 80, DType::BF16).empty());
}

TEST(Registry, ShippedRegistryParsesAndMarkdownIsGenerated) {
  const auto dir = KernelRegistry::shipped_dir("cpu");
  KernelRegistry reg(dir, std::nullopt);
  const auto md_file = dir / "supported_kernels.md";
  ASSERT_TRUE(std::filesystem::exists(md_file)) << md_file;
  // supported_kernels.md is exactly what the JSON generates (never edited by hand).
  EXPECT_EQ(read_file(md_file), supported_kernels_markdown(reg.entries()));
  for (const auto& e : reg.entries()) {
    EXPECT_FALSE(e.best.empty() && (e.kernel == "gemm" || e.kernel == "gemv")) << e.kernel;
    EXPECT_FALSE(e.used_by.empty()) << e.kernel << " " << shape_string(e.shape);
    EXPECT_FALSE(e.provenance.cpu.empty());
    bool best_listed = false;
    for (const auto& c : e.candidates) best_listed |= c.config == e.best;
    EXPECT_TRUE(best_listed) << e.kernel << " " << shape_string(e.shape);
  }
}

}  // namespace
}  // namespace llmport::test
