// The kernel-path probe (llmport/kernel_probe.hpp): the margin rule, the cache (round
// trip, foreign fingerprint, damaged and truncated files, an unwritable directory) with a
// fake measurement (nothing real is timed here), the LLMPORT_PROBE switch, the defaults
// reading a planted probe (batch-invariant mode not), and `llmport kernels probe --json`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"
#include "llmport/kernel_probe.hpp"
#include "llmport/op.hpp"
#include "llmport/quant.hpp"
#include "llmport/registry.hpp"

#include "support/registry_entry.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {

namespace fs = std::filesystem;

ProbePath path(const std::string& op, int value, double gflops, double wait_share = 0) {
  const std::string key = op == "gemm bf16" ? "fma" : op == "gemv bf16" ? kPrefetchTileKey : kActTileKey;
  return {op, key, value, "p" + std::to_string(value), "m=1 n=2 k=3", {{key, value}}, gflops, wait_share};
}

// A fake measurement: fixed rates, counting its calls.
struct FakeMeasure {
  int* calls;
  std::vector<ProbePath> paths;
  std::vector<ProbePath> operator()(const std::string&) const {
    ++*calls;
    return paths;
  }
};

MachineFingerprint machine(int model) {
  MachineFingerprint m;
  m.vendor = "AuthenticAMD";
  m.family = 25;
  m.model = model;
  m.stepping = 1;
  m.isa_flags = {"avx2", "avx512_bf16", "avx512f"};
  m.threads = 1;
  m.llmport_version = "0.1.0";
  return m;
}

ProbeRequest request(const fs::path& dir, int* calls, int model = 17) {
  ProbeRequest r;
  r.cache_dir = dir;
  r.machine = machine(model);
  r.isa = "avx512bf16";
  // Zen-like: vdpbf16ps 2x the FMA path; q8 blocks faster than fp32 activations.
  r.measure = FakeMeasure{calls, {path("gemm bf16", 0, 200), path("gemm bf16", 1, 100),
                                  path("gemv q8_0", 0, 20), path("gemv q8_0", 1, 50),
                                  path("gemv q4_0", 0, 30), path("gemv q4_0", 1, 25)}};
  return r;
}

TEST(KernelProbeChoice, FasterPathReplacesTheDefaultOnlyBeyondTheMargin) {
  // Default fma 0 (vdpbf16ps): fma 1 must be > 5% faster.
  EXPECT_EQ(choose_path({path("gemm bf16", 0, 100), path("gemm bf16", 1, 105)}, 0), 0);
  EXPECT_EQ(choose_path({path("gemm bf16", 0, 100), path("gemm bf16", 1, 105.1)}, 0), 1);
  EXPECT_EQ(choose_path({path("gemm bf16", 0, 100), path("gemm bf16", 1, 50)}, 0), 0);
  // Default act 1: act 0 replaces it only when faster by the margin.
  EXPECT_EQ(choose_path({path("gemv q8_0", 0, 200), path("gemv q8_0", 1, 100)}, 1), 0);
  EXPECT_EQ(choose_path({path("gemv q8_0", 0, 104), path("gemv q8_0", 1, 100)}, 1), 1);
  // The margin is a parameter; an unmeasured (or zero) default path keeps the default.
  EXPECT_EQ(choose_path({path("gemm bf16", 0, 100), path("gemm bf16", 1, 115)}, 0, 0.2), 0);
  EXPECT_EQ(choose_path({path("gemm bf16", 1, 500)}, 0), 0);
  EXPECT_EQ(choose_path({path("gemm bf16", 0, 0), path("gemm bf16", 1, 500)}, 0), 0);
}

TEST(KernelProbeChoice, IsaDefaultsAndPerOpChoices) {
  EXPECT_EQ(isa_default_path("gemm bf16", "avx512bf16"), 0);
  EXPECT_EQ(isa_default_path("gemm bf16", "avx512"), std::nullopt);  // one path below bf16
  EXPECT_EQ(isa_default_path("gemm bf16", "avx2"), std::nullopt);
  EXPECT_EQ(isa_default_path("gemv q8_0", "scalar"), 1);
  EXPECT_EQ(isa_default_path("gemv q4_0", "avx512bf16"), 1);
  EXPECT_EQ(isa_default_path("rmsnorm", "avx512bf16"), std::nullopt);
  const std::vector<ProbePath> ps = {path("gemm bf16", 0, 100), path("gemm bf16", 1, 190),
                                     path("gemv q8_0", 0, 10), path("gemv q8_0", 1, 30)};
  const auto c = choose_defaults(ps, "avx512bf16");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.at("gemm bf16").key, "fma");
  EXPECT_EQ(c.at("gemm bf16").value, 1);
  EXPECT_EQ(c.at("gemm bf16").isa_default, 0);
  EXPECT_EQ(c.at("gemv q8_0").value, 1);
  // At avx512 the bf16 GEMM has no choice to make.
  EXPECT_EQ(choose_defaults(ps, "avx512").count("gemm bf16"), 0u);
}

// The decode GEMV's prefetch hint: prefetcht1 (pf 0) unless prefetchnta measured faster by
// more than kPrefetchProbeMargin (2%), at the AVX-512 levels only (the AVX2 and scalar
// kernels have one hint).
TEST(KernelProbeChoice, ThePrefetchHintNeedsItsOwnMarginAtTheAvx512Levels) {
  EXPECT_EQ(isa_default_path("gemv bf16", "avx512bf16"), 0);
  EXPECT_EQ(isa_default_path("gemv bf16", "avx512"), 0);
  EXPECT_EQ(isa_default_path("gemv bf16", "avx2"), std::nullopt);
  EXPECT_EQ(op_margin("gemv bf16"), kPrefetchProbeMargin);
  EXPECT_EQ(op_margin("gemm bf16"), kProbeMargin);
  auto chosen = [](double t1, double nta, const std::string& isa) {
    const auto c = choose_defaults({path("gemv bf16", 0, t1), path("gemv bf16", 1, nta)}, isa);
    return c.count("gemv bf16") ? c.at("gemv bf16").value : -1;
  };
  EXPECT_EQ(chosen(100, 103, "avx512bf16"), 1);
  EXPECT_EQ(chosen(100, 103, "avx512"), 1);
  EXPECT_EQ(chosen(100, 101.5, "avx512bf16"), 0);
  EXPECT_EQ(chosen(100, 90, "avx512bf16"), 0);
  EXPECT_EQ(chosen(100, 103, "avx2"), -1);
}

// A path timed while its threads waited for cores more than kProbeMaxWaitShare of the time
// measured the other work, not the path: its op keeps the ISA-flag default however fast
// another path looked, and disturbed_ops names the op with its largest share.
TEST(KernelProbeChoice, ADisturbedOpKeepsItsDefault) {
  const std::vector<ProbePath> ps = {path("gemm bf16", 0, 100), path("gemm bf16", 1, 300, 0.35),
                                     path("gemv bf16", 0, 50, 0.2), path("gemv bf16", 1, 80, 0.6),
                                     path("gemv q8_0", 0, 10, kProbeMaxWaitShare), path("gemv q8_0", 1, 5)};
  const auto d = disturbed_ops(ps);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d.at("gemm bf16"), 0.35);
  EXPECT_EQ(d.at("gemv bf16"), 0.6);  // the larger of its two windows
  const auto c = choose_defaults(ps, "avx512bf16");
  EXPECT_EQ(c.at("gemm bf16").value, 0);  // 3x faster, but disturbed
  EXPECT_EQ(c.at("gemv bf16").value, 0);
  EXPECT_EQ(c.at("gemv q8_0").value, 0);  // at the bound is clean: measured 2x faster, chosen
  // The same rates undisturbed choose the faster paths.
  const auto clean = choose_defaults({path("gemm bf16", 0, 100), path("gemm bf16", 1, 300)}, "avx512bf16");
  EXPECT_EQ(clean.at("gemm bf16").value, 1);
}

// LLMPORT_PROBE_CACHE=" " used to be a directory " " made in the working directory.
TEST(KernelProbeCache, AWhitespaceOnlyCacheVariableIsRefusedNamingIt) {
  test::ScopedEnv env("LLMPORT_PROBE_CACHE", std::string(" "));
  try {
    (void)probe_cache_dir();
    ADD_FAILURE() << "LLMPORT_PROBE_CACHE=' ' accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "LLMPORT_PROBE_CACHE=' ': whitespace-only path (unset it or name a directory)");
  }
  env.set("LLMPORT_PROBE_CACHE", std::string("/tmp/probe dir"));
  EXPECT_EQ(probe_cache_dir(), std::filesystem::path("/tmp/probe dir"));
}

TEST(KernelProbeCache, RoundTripMeasuresOnceAndForceMeasuresAgain) {
  TempDir dir;
  int calls = 0;
  const ProbeRequest req = request(dir.path(), &calls);
  ProbeSource src;
  const KernelProbe a = load_or_probe(req, &src);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(src.from_cache);
  EXPECT_TRUE(src.written);
  ASSERT_TRUE(src.file);
  EXPECT_EQ(*src.file, dir.path() / ("cpu_" + req.machine.id() + ".json"));
  EXPECT_EQ(a.chosen.at("gemm bf16").value, 0);  // vdpbf16ps 2x: kept
  EXPECT_EQ(a.chosen.at("gemv q8_0").value, 1);
  EXPECT_EQ(a.chosen.at("gemv q4_0").value, 0);  // fp32 activations 1.2x: chosen
  // The file: rates per path, the choice, version, fingerprint, date.
  const auto j = nlohmann::json::parse(read_file(*src.file));
  EXPECT_EQ(j.at("llmport_version"), "0.1.0");
  EXPECT_EQ(j.at("fingerprint").at("id"), req.machine.id());
  EXPECT_EQ(j.at("isa"), "avx512bf16");
  EXPECT_EQ(j.at("measured_at").get<std::string>().size(), 20u);  // 2026-12-02T00:00:00Z
  ASSERT_EQ(j.at("paths").size(), 6u);
  EXPECT_EQ(j.at("paths")[1].at("gflops").get<double>(), 100.0);
  EXPECT_EQ(j.at("chosen").at("gemv q4_0").at("value"), 0);
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);

  const KernelProbe b = load_or_probe(req, &src);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(src.from_cache);
  EXPECT_EQ(to_json(b), to_json(a));

  ProbeRequest forced = req;
  forced.force = true;
  load_or_probe(forced, &src);
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(src.from_cache);
}

TEST(KernelProbeCache, ForeignFingerprintOrLevelIsMeasuredAgain) {
  TempDir dir;
  int calls = 0;
  const ProbeRequest here = request(dir.path(), &calls, 17);
  const ProbeRequest other = request(dir.path(), &calls, 97);
  load_or_probe(other);
  ASSERT_EQ(calls, 1);
  // Another machine's file under this machine's name (copied across): not used, replaced.
  fs::copy_file(probe_cache_file(dir.path(), other.machine), probe_cache_file(dir.path(), here.machine));
  ProbeSource src;
  const KernelProbe p = load_or_probe(here, &src);
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(src.from_cache);
  EXPECT_EQ(p.machine.id(), here.machine.id());
  EXPECT_EQ(nlohmann::json::parse(read_file(*src.file)).at("fingerprint").at("id"), here.machine.id());
  // The same machine's probe at another level: measured again.
  ProbeRequest avx2 = here;
  avx2.isa = "avx2";
  load_or_probe(avx2, &src);
  EXPECT_EQ(calls, 3);
  EXPECT_FALSE(src.from_cache);
}

// A file of an older format version (written by a build whose probed kernels have since
// changed): measured again, silently, and replaced; a newer or mistyped version is damage.
TEST(KernelProbeCache, AnOlderFormatVersionIsMeasuredAgainWithoutAWarning) {
  TempDir dir;
  int calls = 0;
  const ProbeRequest req = request(dir.path(), &calls);
  load_or_probe(req);
  const fs::path file = probe_cache_file(dir.path(), req.machine);
  auto j = nlohmann::json::parse(read_file(file));
  const int current = j.at("format_version").get<int>();
  ASSERT_GE(current, 2);
  j["format_version"] = current - 1;
  write_file(file, j.dump());
  testing::internal::CaptureStderr();
  ProbeSource src;
  load_or_probe(req, &src);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(src.from_cache);
  EXPECT_EQ(nlohmann::json::parse(read_file(file)).at("format_version"), current);
}

// load_or_probe(req) with stderr captured: the probe, where it came from, the warnings.
struct CapturedProbe {
  KernelProbe probe;
  ProbeSource src;
  std::string err;
};
CapturedProbe probe_capturing_stderr(const ProbeRequest& req) {
  CapturedProbe c;
  testing::internal::CaptureStderr();
  c.probe = load_or_probe(req, &c.src);
  c.err = testing::internal::GetCapturedStderr();
  return c;
}

// A damaged cache file: one warning naming it and why (`reason`, in llmport's words, never
// a JSON library's), a new measurement, a whole file after.
void expect_remeasured(const std::string& content, const std::string& reason) {
  TempDir dir;
  int calls = 0;
  const ProbeRequest req = request(dir.path(), &calls);
  const fs::path file = probe_cache_file(dir.path(), req.machine);
  write_file(file, content);
  const auto [p, src, err] = probe_capturing_stderr(req);
  EXPECT_EQ(calls, 1) << content;
  EXPECT_FALSE(src.from_cache);
  EXPECT_EQ(err, "warning: kernel probe cache " + file.string() + " is damaged (" + reason + "); measuring again\n");
  EXPECT_EQ(err.find("json.exception"), std::string::npos) << err;
  EXPECT_EQ(to_json(probe_from_json(nlohmann::json::parse(read_file(file)))), to_json(p));
}

TEST(KernelProbeCache, DamagedOrTruncatedFileWarnsOnceAndMeasuresAgain) {
  TempDir dir;
  int calls = 0;
  load_or_probe(request(dir.path(), &calls));
  const std::string good = read_file(probe_cache_file(dir.path(), machine(17)));
  expect_remeasured("not json at all", "not valid JSON (syntax error at byte 2 of 15)");
  // Truncated: the JSON ends with the file, at its last byte (not "byte 7 of 6").
  expect_remeasured(good.substr(0, good.size() / 2),
                    fmt::format("not valid JSON (unexpected end of file at byte {})", good.size() / 2));
  expect_remeasured("{\"a\": 1", "not valid JSON (unexpected end of file at byte 7)");
  expect_remeasured("", "empty, not JSON");
  expect_remeasured("[1, 2]", "the top level: expected an object");
  auto j = nlohmann::json::parse(good);
  j["chosen"]["gemm bf16"]["value"] = 2;  // out of range
  expect_remeasured(j.dump(), "chosen.gemm bf16.value: expected 0 or 1, got 2");
  j = nlohmann::json::parse(good);
  j["paths"][0]["gflops"] = "fast";  // mistyped
  expect_remeasured(j.dump(), "paths[0].gflops: expected a number, got \"fast\"");
  j = nlohmann::json::parse(good);
  j["fingerprint"]["isa_flags"] = {"avx2", 3};
  expect_remeasured(j.dump(), "fingerprint.isa_flags: expected a list of strings, got 3");
  j = nlohmann::json::parse(good);
  j["paths"] = "none";
  expect_remeasured(j.dump(), "paths: expected a list, got string");
  j = nlohmann::json::parse(good);
  j.erase("fingerprint");
  expect_remeasured(j.dump(), "fingerprint: missing");
  j = nlohmann::json::parse(good);
  j["paths"][1].erase("op");
  expect_remeasured(j.dump(), "paths[1].op: missing");
  j = nlohmann::json::parse(good);
  j["format_version"] = j["format_version"].get<int>() + 1;  // from a newer build
  expect_remeasured(j.dump(), "format_version: expected 4");
  j = nlohmann::json::parse(good);
  j["format_version"] = "4";
  expect_remeasured(j.dump(), "format_version: expected an integer in the range of int, got \"4\"");
  j = nlohmann::json::parse(good);
  j["paths"][2]["wait_share"] = -0.5;
  expect_remeasured(j.dump(), "paths[2].wait_share: expected a share >= 0");
  j = nlohmann::json::parse(good);
  j["paths"][2].erase("wait_share");
  expect_remeasured(j.dump(), "paths[2].wait_share: missing");
  // Valid values that the file's own rates contradict (fma 1 measured at half the rate of
  // fma 0), and an id that is not its fields': damaged, not obeyed.
  j = nlohmann::json::parse(good);
  ASSERT_EQ(j["chosen"]["gemm bf16"]["value"], 0);
  j["chosen"]["gemm bf16"]["value"] = 1;
  expect_remeasured(j.dump(), "chosen: does not follow from the measured paths");
  j = nlohmann::json::parse(good);
  ASSERT_TRUE(j["fingerprint"].contains("id"));
  j["fingerprint"]["id"] = "fp-0000000000000000";
  expect_remeasured(j.dump(), "fingerprint.id: not the id of the fingerprint's fields (" + machine(17).id() + ")");
}

// A disturbed probe serves this process with the defaults, says so once per op on stderr,
// and is not cached: the next process measures again (and caches a clean probe).
TEST(KernelProbeCache, ADisturbedProbeIsNotCachedAndMeasuredAgain) {
  TempDir dir;
  int calls = 0;
  ProbeRequest req = request(dir.path(), &calls);
  req.measure = FakeMeasure{&calls, {path("gemm bf16", 0, 100, 0.02), path("gemm bf16", 1, 300, 0.45)}};
  const auto [p, src, err] = probe_capturing_stderr(req);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(src.written);
  EXPECT_FALSE(fs::exists(probe_cache_file(dir.path(), req.machine)));
  EXPECT_EQ(p.chosen.at("gemm bf16").value, 0);
  EXPECT_EQ(err, "warning: kernel probe: gemm bf16 was timed while other work held the cores (threads waited "
                 "for a core 45% of the time, more than 10%); it keeps its ISA-flag default and the probe is not "
                 "cached, so the next run measures again\n");
  req.measure = FakeMeasure{&calls, {path("gemm bf16", 0, 100, 0.02), path("gemm bf16", 1, 300, 0.01)}};
  ProbeSource again;
  const KernelProbe q = load_or_probe(req, &again);
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(again.written);
  EXPECT_EQ(q.chosen.at("gemm bf16").value, 1);
  auto j = nlohmann::json::parse(read_file(probe_cache_file(dir.path(), req.machine)));
  EXPECT_EQ(j.at("paths")[1].at("wait_share").get<double>(), 0.01);
  // A cache file that holds a disturbed path (load_or_probe never writes one: hand-made or
  // copied) is measured again, not obeyed.
  j["paths"][1]["wait_share"] = 0.45;
  j["chosen"]["gemm bf16"]["value"] = 0;  // what its own rates choose, so not "damaged"
  write_file(probe_cache_file(dir.path(), req.machine), j.dump());
  ProbeSource third;
  load_or_probe(req, &third);
  EXPECT_EQ(calls, 3);
  EXPECT_FALSE(third.from_cache);
  EXPECT_TRUE(third.written);
}

// A directory in the cache file's place is the user's: one line naming it and saying it is
// a directory, nothing written over it or beside it (no temporary file), the measurement
// served, and no "damaged" report or JSON library text.
TEST(KernelProbeCache, ADirectoryInPlaceOfTheFileIsReportedAndNotReplaced) {
  TempDir dir;
  int calls = 0;
  const ProbeRequest req = request(dir.path(), &calls);
  const fs::path file = probe_cache_file(dir.path(), req.machine);
  fs::create_directories(file / "keep");
  const auto [p, src, err] = probe_capturing_stderr(req);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(src.written);
  EXPECT_FALSE(src.from_cache);
  EXPECT_EQ(p.chosen.at("gemv q4_0").value, 0);
  EXPECT_EQ(err, "warning: kernel probe cache " + file.string() +
                     " is a directory, not a file; it was not replaced, so the measurement serves this process only\n");
  EXPECT_TRUE(fs::is_directory(file / "keep"));
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

// LLMPORT_PROBE_CACHE naming a regular file: one warning in llmport's words naming the
// file in the directory's place (never "filesystem error: ..."), nothing written, the
// measurement served, the file untouched.
TEST(KernelProbeCache, AFileInPlaceOfTheCacheDirectoryIsReportedInLlmportsWords) {
  TempDir dir;
  const fs::path file = dir.path() / "not_a_dir";
  write_file(file, "keep");
  int calls = 0;
  const ProbeRequest req = request(file, &calls);
  const auto [p, src, err] = probe_capturing_stderr(req);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(src.written);
  EXPECT_FALSE(src.from_cache);
  EXPECT_EQ(p.chosen.at("gemv q4_0").value, 0);
  EXPECT_EQ(err, "warning: kernel probe cache " + probe_cache_file(file, req.machine).string() + ": " +
                     file.string() + " is not a directory; the measurement serves this process only\n");
  EXPECT_EQ(read_file(file), "keep");
}

TEST(KernelProbeCache, UnwritableCacheWarnsAndServesTheMeasurement) {
  TempDir dir;
  write_file(dir.path() / "file", "x");
  int calls = 0;
  const ProbeRequest req = request(dir.path() / "file" / "sub", &calls);
  const auto [p, src, err] = probe_capturing_stderr(req);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(p.chosen.at("gemv q4_0").value, 0);
  // The cache directory cannot be made: a file is where one of its parents would be.
  EXPECT_EQ(err, "warning: kernel probe cache " + probe_cache_file(req.cache_dir.value(), req.machine).string() +
                     ": " + (dir.path() / "file").string() + " is not a directory; the measurement serves this process only\n");
}

TEST(KernelProbeEnv, SwitchAndCacheDirectory) {
  {
    ScopedEnv e("LLMPORT_PROBE", std::nullopt);
    EXPECT_TRUE(probe_enabled());
  }
  for (const char* v : {"0", "off"}) {
    ScopedEnv e("LLMPORT_PROBE", v);
    EXPECT_FALSE(probe_enabled()) << v;
  }
  for (const char* v : {"1", "on"}) {
    ScopedEnv e("LLMPORT_PROBE", v);
    EXPECT_TRUE(probe_enabled()) << v;
  }
  {
    ScopedEnv e("LLMPORT_PROBE", "maybe");
    try {
      probe_enabled();
      ADD_FAILURE() << "no UsageError";
    } catch (const UsageError& err) {
      EXPECT_STREQ(err.what(), "LLMPORT_PROBE=maybe: expected 0, off, 1 or on");
    }
  }
  {
    ScopedEnv c("LLMPORT_PROBE_CACHE", "/tmp/probe-here");
    EXPECT_EQ(probe_cache_dir(), fs::path("/tmp/probe-here"));
  }
  ScopedEnv c("LLMPORT_PROBE_CACHE", std::nullopt);
  ScopedEnv x("XDG_DATA_HOME", "/tmp/xdg");
  EXPECT_EQ(probe_cache_dir(), fs::path("/tmp/xdg/llmport/probe"));  // beside .../registry
}

// The ISA-flag defaults of the machine's best level (what runs with the probe off).
TileConfig bf16_default(cpu::Isa isa) { return cpu::default_tile_config(isa, DType::BF16, 64, 64, false); }

TEST(KernelProbeDefaults, OffMeansIsaDefaultsAndNoProbe) {
  TempDir dir;
  ScopedEnv p("LLMPORT_PROBE", "0");
  ScopedEnv c("LLMPORT_PROBE_CACHE", dir.path().string());
  cpu::forget_machine_probe();
  const cpu::Isa isa = cpu::detect_isa();
  EXPECT_EQ(cpu::default_tile_config(isa, DType::BF16, 64, 64), bf16_default(isa));
  EXPECT_EQ(cpu::default_quant_tile_config(isa, QuantType::Q8_0, 64, 64), (TileConfig{{kActTileKey, 1}}));
  EXPECT_EQ(machine_kernel_probe(), nullptr);
  EXPECT_TRUE(fs::is_empty(dir.path()));  // nothing measured, nothing written
}

// A probe planted in the cache for this machine (fma 1 wins at avx512bf16, fp32 activations
// win for q8_0): the defaults read it, batch-invariant mode does not.
TEST(KernelProbeDefaults, DefaultsReadThisMachinesProbeButNotInBatchInvariantMode) {
  TempDir dir;
  int calls = 0;
  ProbeRequest req = machine_probe_request();
  req.cache_dir = dir.path();
  req.measure = FakeMeasure{&calls, {path("gemm bf16", 0, 100), path("gemm bf16", 1, 200),
                                     path("gemv q8_0", 0, 90), path("gemv q8_0", 1, 30)}};
  load_or_probe(req);
  ScopedEnv p("LLMPORT_PROBE", "1");
  ScopedEnv c("LLMPORT_PROBE_CACHE", dir.path().string());
  cpu::forget_machine_probe();
  const cpu::Isa isa = cpu::detect_isa();
  const bool bf16 = isa == cpu::Isa::Avx512Bf16;
  TileConfig want = bf16_default(isa);
  if (bf16) want = bf16_default(cpu::Isa::Avx512);  // the fp32-FMA config with its blocking
  EXPECT_EQ(cpu::default_tile_config(isa, DType::BF16, 64, 64), want) << cpu::isa_name(isa);
  if (bf16) {
    EXPECT_EQ(want.at("fma"), 1);
  }
  EXPECT_EQ(cpu::default_quant_tile_config(isa, QuantType::Q8_0, 64, 64), (TileConfig{{kActTileKey, 0}}));
  // q4_0 was not probed: today's default.
  EXPECT_EQ(cpu::default_quant_tile_config(isa, QuantType::Q4_0, 64, 64), (TileConfig{{kActTileKey, 1}}));
  // A backend forced to another level does not use a probe of this one.
  if (isa != cpu::Isa::Scalar) {
    EXPECT_EQ(cpu::default_quant_tile_config(cpu::Isa::Scalar, QuantType::Q8_0, 64, 64),
              (TileConfig{{kActTileKey, 1}}));
  }

  auto be = cpu::make_cpu_backend_isa(1, isa);
  OpDesc gemm{OpKind::Gemm, DType::BF16, {{"m", 512}, {"n", 64}, {"k", 64}}};
  OpDesc gemv_q8{OpKind::Gemv, DType::F32, {{"m", 1}, {"n", 64}, {"k", 64}}};
  gemv_q8.quant = QuantType::Q8_0;
  gemv_q8.quant_block = kQuantBlock;
  EXPECT_EQ(be->default_tiles(gemm), want);
  EXPECT_EQ(be->default_tiles(gemv_q8), (TileConfig{{kActTileKey, 0}}));
  be->set_batch_invariant(true);
  EXPECT_EQ(be->default_tiles(gemm), bf16_default(isa));
  EXPECT_EQ(be->default_tiles(gemv_q8), (TileConfig{{kActTileKey, 1}}));
  EXPECT_EQ(calls, 1);  // the planted file served; nothing else was measured
  cpu::forget_machine_probe();
}

// The lookup order: a registry entry measured on this machine for the exact shape, else
// the probed default; an entry of another machine is never used.
TEST(KernelProbeDefaults, ThisMachinesRegistryEntryOverridesTheProbedDefault) {
  TempDir dir;
  int calls = 0;
  ProbeRequest req = machine_probe_request();
  req.cache_dir = dir.path() / "probe";
  req.measure = FakeMeasure{&calls, {path("gemm bf16", 0, 100), path("gemm bf16", 1, 200)}};
  load_or_probe(req);
  ScopedEnv p("LLMPORT_PROBE", "1");
  ScopedEnv c("LLMPORT_PROBE_CACHE", req.cache_dir->string());
  cpu::forget_machine_probe();
  const cpu::Isa isa = cpu::detect_isa();
  auto be = cpu::make_cpu_backend_isa(2, isa);
  const auto measured = [&](int n, const MachineFingerprint& m) {
    TileConfig best = {{"mr", 5}, {"np", 1}, {"kc", 256}, {"mc", 60}, {"nc", 256}};
    if (isa == cpu::Isa::Avx512Bf16 || isa == cpu::Isa::Avx512) best["fma"] = 0;
    RegistryEntry e = measured_entry("gemm", "bf16", be->isa(), {{"m", 64}, {"n", n}, {"k", 80}}, best, 10, "m1", 2);
    e.provenance.fingerprint = m;
    return e;
  };
  MachineFingerprint other = MachineFingerprint::current(2);
  other.model += 1;
  auto reg = std::make_shared<KernelRegistry>(dir.path() / "none", dir.path() / "w");
  reg->record(measured(96, MachineFingerprint::current(2)));
  reg->record(measured(112, other));
  KernelSelection sel;
  sel.registry = reg;
  sel.prefill_m = 64;
  sel.machine = MachineFingerprint::current(2);
  const TileConfig probed = cpu::default_tile_config(isa, DType::BF16, 96, 80);
  if (isa == cpu::Isa::Avx512Bf16) {
    EXPECT_EQ(probed.at("fma"), 1);  // the planted probe's winner
  }
  const TileConfig mine = sel.linear_config(*be, 96, 80, DType::BF16);
  EXPECT_EQ(mine.at("mr"), 5);  // this machine's entry
  if (mine.count("fma")) {
    EXPECT_EQ(mine.at("fma"), 0);
  }
  // The other machine's entry is skipped: the probed default serves its shape.
  const TileConfig foreign = sel.linear_config(*be, 112, 80, DType::BF16);
  EXPECT_EQ(foreign, probed);
  EXPECT_EQ(sel.foreign_skipped, 1);
  EXPECT_EQ(calls, 1);
  cpu::forget_machine_probe();
}

// `llmport kernels probe --json` on this machine: the paths its level has, the choice, the
// cache file (rates are not checked: they are this machine's).
TEST(KernelProbeCli, JsonReportsThisLevelsPathsAndCaches) {
  TempDir dir;
  ScopedEnv p("LLMPORT_PROBE", std::nullopt);
  ScopedEnv c("LLMPORT_PROBE_CACHE", dir.path().string());
  const MachineFingerprint here = MachineFingerprint::current(1);
  const auto r = run_llmport({"kernels", "probe", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const std::string isa = cpu::isa_name(cpu::detect_isa());
  EXPECT_TRUE(j.at("enabled").get<bool>());
  EXPECT_EQ(j.at("fingerprint").at("id"), here.id());
  EXPECT_EQ(j.at("isa"), isa);
  EXPECT_FALSE(j.at("from_cache").get<bool>());
  EXPECT_EQ(j.at("cache_file"), probe_cache_file(dir.path(), here).string());
  // A real probe beside the other tests may be disturbed (its threads waited for cores):
  // then a path says so, stderr names the op, and nothing is cached. The rule itself is
  // tested with fixed shares above; here either outcome must be the consistent one.
  bool disturbed = false;
  std::vector<std::string> got;
  for (const auto& x : j.at("paths")) {
    got.push_back(x.at("op").get<std::string>() + " " + x.at("key").get<std::string>() + "=" +
                  std::to_string(x.at("value").get<int>()));
    EXPECT_GT(x.at("gflops").get<double>(), 0) << x.dump();
    EXPECT_GE(x.at("wait_share").get<double>(), 0) << x.dump();
    if (x.at("wait_share").get<double>() > kProbeMaxWaitShare) {
      disturbed = true;
      EXPECT_NE(r.err.find("warning: kernel probe: " + x.at("op").get<std::string>() + " was timed while other work"),
                std::string::npos)
          << r.err;
      EXPECT_EQ(j.at("chosen").at(x.at("op").get<std::string>()).at("value"),
                isa_default_path(x.at("op").get<std::string>(), isa).value());
    }
  }
  EXPECT_EQ(j.at("cache_written").get<bool>(), !disturbed);
  EXPECT_EQ(fs::exists(probe_cache_file(dir.path(), here)), !disturbed);
  std::vector<std::string> want = {"gemv q8_0 act=0", "gemv q8_0 act=1", "gemv q4_0 act=0", "gemv q4_0 act=1"};
  const bool avx512 = isa == "avx512bf16" || isa == "avx512";
  if (avx512) want.insert(want.begin(), {"gemv bf16 pf=0", "gemv bf16 pf=1"});
  if (isa == "avx512bf16") want.insert(want.begin(), {"gemm bf16 fma=0", "gemm bf16 fma=1"});
  EXPECT_EQ(got, want);
  EXPECT_EQ(j.at("chosen").size(), 2u + (avx512 ? 1u : 0u) + (isa == "avx512bf16" ? 1u : 0u));
  for (const auto& [op, ch] : j.at("chosen").items()) {
    EXPECT_EQ(ch.at("isa_default"), isa_default_path(op, isa).value()) << op;
    EXPECT_TRUE(ch.at("value") == 0 || ch.at("value") == 1) << op;
  }
  // Again: read from the cache (same measurement) when one was written; --force measures
  // again.
  const auto again = nlohmann::json::parse(run_llmport({"kernels", "probe", "--json"}).out);
  if (!disturbed) {
    EXPECT_TRUE(again.at("from_cache").get<bool>());
    EXPECT_EQ(again.at("measured_at"), j.at("measured_at"));
    EXPECT_EQ(again.at("paths"), j.at("paths"));
  }
  const auto forced = nlohmann::json::parse(run_llmport({"kernels", "probe", "--json", "--force"}).out);
  EXPECT_FALSE(forced.at("from_cache").get<bool>());
  // The text form names the cache file and each chosen default.
  const auto text = run_llmport({"kernels", "probe"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("cache " + probe_cache_file(dir.path(), here).string()), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("default gemv q8_0"), std::string::npos) << text.out;
}

TEST(KernelProbeCli, DisabledOrBadSwitch) {
  TempDir dir;
  ScopedEnv c("LLMPORT_PROBE_CACHE", dir.path().string());
  {
    ScopedEnv p("LLMPORT_PROBE", "0");
    const auto r = run_llmport({"kernels", "probe", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_FALSE(j.at("enabled").get<bool>());
    EXPECT_TRUE(j.at("paths").empty());
    EXPECT_EQ(j.at("chosen").at("gemv q8_0").at("value"), 1);
    EXPECT_TRUE(fs::is_empty(dir.path()));
  }
  ScopedEnv p("LLMPORT_PROBE", "maybe");
  const auto r = run_llmport({"kernels", "probe"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: LLMPORT_PROBE=maybe: expected 0, off, 1 or on\n");
}

}  // namespace
}  // namespace llmport::test
