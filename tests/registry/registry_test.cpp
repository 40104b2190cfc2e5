// Kernel registry: JSON round trip, exact lookup and its helpful miss, writable-first
// layering, read-only shipped data, generated supported_kernels.md, kernel selection.
#include <gtest/gtest.h>

#include <fstream>

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

// The machine the test entries were measured on (Provenance::current(2) above).
MachineFingerprint here() { return MachineFingerprint::current(2); }

// A machine that is not this one (a Zen 4 EPYC with 2 threads).
MachineFingerprint zen4() {
  MachineFingerprint f;
  f.vendor = "AuthenticAMD";
  f.family = 25;
  f.model = 17;
  f.stepping = 1;
  f.isa_flags = {"avx2", "avx512_bf16", "avx512f", "fma"};
  f.threads = 2;
  f.llmport_version = LLMPORT_VERSION;
  return f;
}

TEST(Registry, RoundTripsThroughJsonFiles) {
  TempDir dir;
  {
    KernelRegistry reg(dir.path() / "none", dir.path() / "w");
    reg.record(entry("gemm", {{"m", 512}, {"n", 2048}, {"k", 2048}}, {{"mr", 8}, {"np", 2}}, 321.5));
    reg.save();
  }
  KernelRegistry again(dir.path() / "none", dir.path() / "w");
  const auto* e = again.find("gemm", "bf16", "avx512bf16", {{"m", 512}, {"n", 2048}, {"k", 2048}}, here());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->best.at("mr"), 8);
  EXPECT_DOUBLE_EQ(e->best_throughput(), 321.5);
  EXPECT_EQ(e->used_by, std::vector<std::string>{"m1"});
  EXPECT_FALSE(e->provenance.compiler.empty());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "w" / "gemm_bf16.json"));
  EXPECT_EQ(e->provenance.fingerprint.id(), here().id());
  EXPECT_EQ(e->provenance.fingerprint.threads, 2);
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
  EXPECT_EQ(reg.find("gemv", "bf16", "avx512bf16", {{"n", 2048}, {"k", 2047}}, here()), nullptr);
  try {
    reg.lookup("gemv", "bf16", "avx512bf16", {{"n", 2000}, {"k", 2048}}, here());
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
  ASSERT_NE(ro.find("gemv", "bf16", "avx512bf16", s, here()), nullptr);
  EXPECT_THROW(ro.record(entry("gemv", s, {{"gnp", 2}}, 0)), UsageError);
  EXPECT_THROW(ro.save(), UsageError);
  KernelRegistry layered(dir.path() / "shipped", dir.path() / "mine");
  layered.record(entry("gemv", s, {{"gnp", 4}}, 0));
  EXPECT_EQ(layered.find("gemv", "bf16", "avx512bf16", s, here())->best.at("gnp"), 4);
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
  // Integers that are not ints (the registry fuzzer's float 8.9e115 was converted with
  // undefined behaviour; 2^40 narrowed silently): the file and the field are named.
  for (const char* bad : {"8.9e115", "1099511627776", "1.5"}) {
    SCOPED_TRACE(bad);
    write_file(dir.path() / "gemm_bf16.json",
               std::string("{\"kernel\": \"gemm\", \"dtype\": \"bf16\", \"entries\": [{\"shape\": {\"m\": 8}, ") +
                   "\"isa\": \"avx2\", \"best\": {\"mr\": " + bad + "}}]}");
    try {
      KernelRegistry reg(dir.path(), std::nullopt);
      ADD_FAILURE() << "no throw";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("gemm_bf16.json: malformed registry entry: best.mr: expected an integer"),
                std::string::npos)
          << e.what();
    }
  }
}

// A path key (fma, pf, act) outside 0/1, or a tile size below 1, is refused when the file
// is read, naming the file and field: "pf": 2 or "kc": 0 used to load, list and serve until
// a run used the entry, then fail without naming the file (or never, for an entry of
// another machine).
TEST(Registry, ATileValueOutOfRangeIsRefusedWhereTheFileIsRead) {
  TempDir dir;
  struct Case {
    std::string field, json, why;
  };
  for (const Case& c : std::vector<Case>{
           {"best.pf", "\"best\": {\"gnp\": 2, \"pf\": 2}", "expected 0 or 1"},
           {"best.fma", "\"best\": {\"fma\": -1}", "expected 0 or 1"},
           {"candidates[].config.pf", "\"best\": {\"gnp\": 2}, \"candidates\": [{\"config\": {\"pf\": 3}}]",
            "expected 0 or 1"},
           {"best.kc", "\"best\": {\"gnp\": 2, \"kc\": 0}", "a tile size, expected >= 1"},
           {"best.gnp", "\"best\": {\"gnp\": -2}", "a tile size, expected >= 1"},
           {"candidates[].config.mr", "\"best\": {\"gnp\": 2}, \"candidates\": [{\"config\": {\"mr\": 0}}]",
            "a tile size, expected >= 1"}}) {
    SCOPED_TRACE(c.field);
    write_file(dir.path() / "gemv_bf16.json",
               "{\"kernel\": \"gemv\", \"dtype\": \"bf16\", \"entries\": [{\"shape\": {\"n\": 8, \"k\": 8}, "
               "\"isa\": \"avx2\", " + c.json + "}]}");
    try {
      KernelRegistry reg(dir.path(), std::nullopt);
      ADD_FAILURE() << "no throw";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("gemv_bf16.json: malformed registry entry: " + c.field + ": " + c.why),
                std::string::npos)
          << e.what();
    }
  }
}

// A .json of the user's beside the registry's files (notes.json in a deployment's
// registry/) used to be read as a damaged registry file and stop every run and phase 4; only
// <op name>_<dtype>.json files are the registry's.
TEST(Registry, AJsonFileNotNamedLikeARegistryFileIsLeftAlone) {
  TempDir dir;
  write_file(dir.path() / "notes.json", "{\"mine\": true}");
  write_file(dir.path() / "todo.json", "not even json");
  KernelRegistry reg(dir.path(), std::nullopt);
  EXPECT_TRUE(reg.entries().empty());
  write_file(dir.path() / "gemv_bf16.json", "{\"mine\": true}");  // named as the registry's: refused
  EXPECT_THROW(KernelRegistry(dir.path(), std::nullopt), ConfigError);
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
  sel.machine = here();
  const TileConfig c = sel.linear_config(*be, 96, 80, DType::BF16);
  EXPECT_EQ(c.at("mr"), 5);
  EXPECT_EQ(c.at("gnp"), 1);
  EXPECT_TRUE(sel.heuristic_used.empty());
  // Unmeasured shape: heuristic when allowed (and recorded), an error otherwise.
  const TileConfig h = sel.linear_config(*be, 100, 80, DType::BF16);
  EXPECT_FALSE(h.empty());
  EXPECT_EQ(h, be->default_tiles({OpKind::Gemm, DType::BF16, {{"m", 64}, {"n", 100}, {"k", 80}}}));
  EXPECT_EQ(sel.heuristic_used.size(), 2u);  // its gemm and gemv
  sel.allow_heuristic = false;
  EXPECT_THROW(sel.linear_config(*be, 100, 80, DType::BF16), UsageError);
  // The reference backend takes no tile config.
  auto ref = make_backend("reference");
  EXPECT_TRUE(sel.linear_config(*ref, 100, 80, DType::BF16).empty());
}

// A registry entry whose tile the kernels would not run as given (mr past every level's
// register limit) is refused when a weight is made with it, naming the registry and entry.
TEST(Registry, AnEntryTheKernelsWouldClampIsRefusedNamingTheRegistry) {
  TempDir dir;
  auto be = make_backend("cpu", 1);
  ASSERT_NE(be->isa(), "scalar") << "the scalar kernels read no tile: nothing to refuse";
  auto reg = std::make_shared<KernelRegistry>(dir.path() / "none", dir.path() / "w");
  RegistryEntry g = entry("gemm", {{"m", 64}, {"n", 96}, {"k", 80}}, {{"mr", 17}, {"np", 1}}, 10);
  g.isa = be->isa();
  reg->record(g);
  KernelSelection sel;
  sel.registry = reg;
  sel.prefill_m = 64;
  sel.machine = here();
  const std::vector<float> w(96 * 80, 0.01f);
  try {
    sel.make_linear(*be, TensorView::f32(w.data(), 96, 80), DType::BF16);
    ADD_FAILURE() << "mr 17 was packed";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("kernel registry " + (dir.path() / "w").string() + ": the entry for gemm bf16"),
              std::string::npos) << msg;
    EXPECT_NE(msg.find("'mr' 17"), std::string::npos) << msg;
  }
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

TEST(Registry, FingerprintIdentifiesMachineThreadsAndVersion) {
  const MachineFingerprint a = here();
  EXPECT_FALSE(a.vendor.empty());
  EXPECT_EQ(a.id(), MachineFingerprint::current(2).id());  // stable
  EXPECT_NE(a.id(), MachineFingerprint::current(3).id());  // thread count is part of it
  MachineFingerprint v = a;
  v.llmport_version += "-next";
  EXPECT_NE(a.id(), v.id());
  MachineFingerprint s = a;
  s.stepping += 1;
  EXPECT_NE(a.id(), s.id());
  EXPECT_EQ(fingerprint_from_json(to_json(zen4())).id(), zen4().id());
  EXPECT_NE(zen4().describe().find("AuthenticAMD family 25 model 17 stepping 1 (avx512_bf16 avx512f, 2 threads"),
            std::string::npos)
      << zen4().describe();
}

// Issue #13 finding 6: entries measured on another machine (or carrying no fingerprint, as
// before fingerprints existed) are never used: the heuristic default serves, the selection
// counts them and says so in one line; entries of two machines live side by side.
TEST(Registry, ForeignEntriesAreSkippedCountedAndSaidInOneLine) {
  TempDir dir;
  auto be = make_backend("cpu", 2);
  auto reg = std::make_shared<KernelRegistry>(dir.path() / "none", dir.path() / "w");
  RegistryEntry g = entry("gemm", {{"m", 64}, {"n", 96}, {"k", 80}}, {{"mr", 5}, {"np", 1}, {"fma", 1}}, 10);
  g.isa = be->isa();
  g.provenance.fingerprint = zen4();
  reg->record(g);
  RegistryEntry v = entry("gemv", {{"n", 96}, {"k", 80}}, {{"gnp", 1}}, 0);
  v.isa = be->isa();
  v.provenance.fingerprint = {};  // legacy: no fingerprint
  reg->record(v);
  reg->save();
  KernelRegistry again(dir.path() / "none", dir.path() / "w");
  ASSERT_EQ(again.entries().size(), 2u);
  EXPECT_EQ(again.find("gemm", "bf16", be->isa(), g.shape, zen4())->best.at("mr"), 5);
  KernelSelection sel;
  sel.registry = std::make_shared<KernelRegistry>(dir.path() / "none", dir.path() / "w");
  sel.prefill_m = 64;
  const TileConfig c = sel.linear_config(*be, 96, 80, DType::BF16);
  EXPECT_FALSE(c.empty());
  EXPECT_EQ(c, be->default_tiles({OpKind::Gemm, DType::BF16, {{"m", 64}, {"n", 96}, {"k", 80}}}));
  EXPECT_EQ(sel.foreign_skipped, 2);
  EXPECT_EQ(sel.heuristic_used.size(), 2u);
  EXPECT_TRUE(sel.registry_used.empty());
  sel.linear_config(*be, 96, 80, DType::BF16);  // a second weight of the shape: counted once
  EXPECT_EQ(sel.foreign_skipped, 2);
  const std::string line = sel.foreign_line();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("registry: 2 entries skipped: measured on "), std::string::npos) << line;
  EXPECT_NE(line.find("AuthenticAMD family 25 model 17"), std::string::npos) << line;
  EXPECT_NE(line.find("an unrecorded machine (no fingerprint)"), std::string::npos) << line;
  EXPECT_NE(line.find("'llmport kernels sweep MODEL --prefill --registry DIR' (then --decode) tunes here"), std::string::npos) << line;
  EXPECT_NE(sel.miss_line().find("registry: 2 linear shape(s) not measured on this machine"), std::string::npos)
      << sel.miss_line();
  // Tuned stage (no heuristic allowed): the miss names the foreign measurement.
  KernelSelection strict = sel;
  strict.heuristic_used.clear();
  strict.allow_heuristic = false;
  try {
    strict.linear_config(*be, 96, 80, DType::BF16);
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not this machine"), std::string::npos) << e.what();
  }
  // This machine's entry next to the foreign one: used, the foreign one still counted.
  RegistryEntry mine = g;
  mine.best = {{"mr", 4}, {"np", 1}};
  mine.provenance = Provenance::current(2);
  auto reg2 = std::make_shared<KernelRegistry>(dir.path() / "none", dir.path() / "w");
  reg2->record(mine);
  EXPECT_EQ(reg2->entries().size(), 3u);
  KernelSelection both;
  both.registry = reg2;
  both.prefill_m = 64;
  EXPECT_EQ(both.linear_config(*be, 96, 80, DType::BF16).at("mr"), 4);
  EXPECT_EQ(both.foreign_skipped, 2);
  EXPECT_EQ(both.registry_used.size(), 1u);
}

}  // namespace
}  // namespace llmport::test
