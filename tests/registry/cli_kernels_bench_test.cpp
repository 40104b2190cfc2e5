// `llmport kernels list|validate|sweep` and `llmport bench` through the binary, on the
// shared stories260K model (fails, not skips, when the data is missing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmport/weights.hpp"
#include "llmport/dtype.hpp"
#include "llmport/model_config.hpp"

#include "support/test_support.hpp"

namespace llmport::test {
namespace {

TEST(CliKernels, ValidateStories260kAllPassAndRecords) {
  const auto model = shared_path("models/stories260K");
  TempDir dir;
  const auto reg = (dir.path() / "reg").string();
  auto r = run_llmport({"kernels", "validate", model.string(), "--json", "-t", "2", "--registry", reg});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("failed").get<int>(), 0);
  ASSERT_GT(j.at("rows").size(), 10u);
  for (const auto& row : j["rows"]) EXPECT_TRUE(row.at("pass").get<bool>()) << row.dump();
  auto l = run_llmport({"kernels", "list", "--registry", reg, "--kernel", "gemv"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.out.find("stories260k"), std::string::npos) << l.out;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "reg" / "supported_kernels.md"));
}

// `kernels list --registry` with a path that is not a directory is refused as `run
// --registry` refuses it (it listed the shipped registry alone, without a word).
TEST(CliKernels, ListRefusesARegistryThatIsNotADirectory) {
  TempDir dir;
  const auto file = dir.path() / "registry.json";
  write_file(file, "{}");
  for (const std::string& reg : {file.string(), (dir.path() / "missing").string()}) {
    const std::string error =
        "error: --registry " + reg + ": not a directory (a kernel registry, e.g. <deployment>/registry)\n";
    auto l = run_llmport({"kernels", "list", "--registry", reg});
    EXPECT_EQ(l.exit_code, 2) << l.err;
    EXPECT_EQ(l.err, error);
    EXPECT_EQ(l.out, "");
    auto r = run_llmport({"run", shared_path("models/stories260K").string(), "--prompt", "Once", "-n", "1",
                          "--registry", reg});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, error);
  }
  std::filesystem::create_directories(dir.path() / "reg");  // an empty registry directory: listed
  EXPECT_EQ(run_llmport({"kernels", "list", "--registry", (dir.path() / "reg").string(), "--kernel", "gemv"}).exit_code,
            0);
}

// `kernels list --dtype` filters by the format the entries name, the quantized ones too (it
// refused q8_0 / q4_0, which `list` shows without a filter).
TEST(CliKernels, ListFiltersByEveryFormatTheRegistryHolds) {
  const auto model = shared_path("models/stories260K").string();
  TempDir dir;
  const auto reg = (dir.path() / "reg").string();
  for (const char* d : {"q4_0", "fp32"})
    ASSERT_EQ(run_llmport({"kernels", "validate", model, "--dtype", d, "-t", "1", "--registry", reg}).exit_code, 0) << d;
  for (const std::string d : {"q4_0", "fp32"}) {
    auto l = run_llmport({"kernels", "list", "--registry", reg, "--dtype", d, "--json"});
    ASSERT_EQ(l.exit_code, 0) << l.err;
    const auto rows = nlohmann::json::parse(l.out);
    ASSERT_FALSE(rows.empty()) << d;
    for (const auto& row : rows) EXPECT_EQ(row.at("dtype"), d) << row.dump();
  }
  auto bad = run_llmport({"kernels", "list", "--registry", reg, "--dtype", "int3"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "error: unknown dtype 'int3' (expected bf16, fp16, fp32, q8_0 or q4_0)\n");
  EXPECT_EQ(run_llmport({"kernels", "list", "--json", "--markdown"}).exit_code, 2);
  // A kernel name the registry cannot hold is refused, not listed as "(no entries)".
  auto gemv = run_llmport({"kernels", "list", "--registry", reg, "--kernel", "gemv", "--json"});
  ASSERT_EQ(gemv.exit_code, 0) << gemv.err;
  const auto gemv_rows = nlohmann::json::parse(gemv.out);
  ASSERT_FALSE(gemv_rows.empty());
  for (const auto& row : gemv_rows) EXPECT_EQ(row.at("kernel"), "gemv") << row.dump();
  auto nope = run_llmport({"kernels", "list", "--kernel", "gemm2"});
  EXPECT_EQ(nope.exit_code, 2);
  EXPECT_EQ(nope.err.rfind("error: --kernel: unknown op 'gemm2' (expected embedding, gather_rows, rmsnorm, gemm,", 0),
            0u)
      << nope.err;
}

// --quantize-lm-head (issue #15): lm_head [512, 64] is validated as the q8_0 linear the
// engine runs, never in the base dtype, and the tied embeddings as the table's lookup; the
// flag has run's meaning and checks.
TEST(CliKernels, ValidateQuantizedLmHeadChecksTheQuantizedLinear) {
  const auto model = shared_path("models/stories260K").string();
  auto r = run_llmport({"kernels", "validate", model, "--dtype", "q8_0", "--quantize-lm-head", "q8_0", "--json",
                        "-t", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("failed").get<int>(), 0);
  EXPECT_EQ(j.at("quant_lm_head"), "q8_0");
  std::set<std::string> lm_head;
  int embeddings = 0, gathers = 0;
  for (const auto& row : j["rows"]) {
    EXPECT_TRUE(row.at("pass").get<bool>()) << row.dump();
    embeddings += row.at("kernel") == "embedding";
    gathers += row.at("kernel") == "gather_rows";
    if (row.at("path") != "lm_head") continue;
    EXPECT_EQ(row.at("format"), "q8_0") << row.dump();
    EXPECT_EQ(row.at("shape").at("n"), 512);
    EXPECT_EQ(row.at("shape").at("k"), 64);
    lm_head.insert(row.at("kernel").get<std::string>());
  }
  EXPECT_EQ(lm_head, (std::set<std::string>{"gemm", "gemv"}));
  EXPECT_EQ(embeddings, 1);
  EXPECT_EQ(gathers, 0);
  // The text report names the lm_head row with its format.
  auto t = run_llmport({"kernels", "validate", model, "--dtype", "q4_0", "--quantize-lm-head", "q4_0", "-t", "2"});
  ASSERT_EQ(t.exit_code, 0) << t.err << t.out;
  EXPECT_NE(t.out.find("lm_head=q4_0"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("gemv q4_0 lm_head"), std::string::npos) << t.out;
  // Without a quantized --dtype, or with an unknown format: a one-line usage error.
  const auto bf16 = run_llmport({"kernels", "validate", model, "--dtype", "bf16", "--quantize-lm-head", "q8_0"});
  EXPECT_EQ(bf16.exit_code, 2);
  EXPECT_EQ(bf16.err, "error: --quantize-lm-head needs a quantized --dtype (q8_0 or q4_0)\n");
  const auto q3 = run_llmport({"kernels", "validate", model, "--dtype", "q8_0", "--quantize-lm-head", "q3_k"});
  EXPECT_EQ(q3.exit_code, 2);
  EXPECT_EQ(q3.err, "error: --quantize-lm-head 'q3_k': expected q8_0 or q4_0\n");
}

TEST(CliKernels, SweepNeedsWritableRegistryAndOneMode) {
  const auto model = shared_path("models/stories260K").string();
  TempDir dir;
  {
    // Without --registry a sweep writes the user registry, $XDG_DATA_HOME/llmport/registry/cpu
    // (never the installed data): pointed at a temporary directory here, not the real home.
    TempDir xdg;
    const char* old = std::getenv("XDG_DATA_HOME");
    const std::string saved = old ? old : "";
    setenv("XDG_DATA_HOME", xdg.path().c_str(), 1);
    auto user = run_llmport({"kernels", "sweep", model, "--decode", "--reps", "1", "-t", "1"});
    if (old) setenv("XDG_DATA_HOME", saved.c_str(), 1);
    else unsetenv("XDG_DATA_HOME");
    EXPECT_EQ(user.exit_code, 0) << user.err;
    EXPECT_TRUE(std::filesystem::exists(xdg.path() / "llmport" / "registry" / "cpu" / "gemv_fp32.json")) << user.out;
  }
  EXPECT_EQ(run_llmport({"kernels", "sweep", model, "--registry", dir.path().string()}).exit_code, 2);
  auto r = run_llmport({"kernels", "sweep", model, "--decode", "--registry", dir.path().string(),
                        "--reps", "1", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "gemv_fp32.json"));
  EXPECT_EQ(run_llmport({"kernels", "validate", model, "--isa", "sse9"}).exit_code, 2);
  // An unknown --dtype names every dtype the command takes, the quantized ones included.
  const auto q3 = run_llmport({"kernels", "validate", model, "--dtype", "q3"});
  EXPECT_EQ(q3.exit_code, 2);
  EXPECT_EQ(q3.err, "error: unknown dtype 'q3' (expected bf16, fp16, fp32, q8_0 or q4_0)\n");
}

TEST(CliBench, JsonHasLlamaBenchFields) {
  const auto model = shared_path("models/stories260K").string();
  auto r = run_llmport({"bench", model, "-p", "8,16", "-n", "4", "-r", "2", "-t", "1", "-o", "json",
                        "--no-roofline"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0].at("test"), "pp8");
  EXPECT_EQ(j[0].at("n_prompt"), 8);
  EXPECT_EQ(j[1].at("test"), "pp16");
  EXPECT_EQ(j[2].at("test"), "tg4");
  EXPECT_EQ(j[2].at("n_gen"), 4);
  for (const auto& t : j) {
    EXPECT_GT(t.at("avg_ts").get<double>(), 0);
    EXPECT_GE(t.at("stddev_ts").get<double>(), 0);
    EXPECT_EQ(t.at("samples_ts").size(), 2u);
    EXPECT_TRUE(t.contains("roofline_fraction"));
    // Which compute peak the pp bound used (0 here: --no-roofline).
    EXPECT_EQ(t.at("roofline").at("compute_peak_gflops").get<double>(), 0.0);
    EXPECT_EQ(t.at("roofline").at("compute_peak"), "fp32_fma");
  }
  // Without a roofline nothing bounds the tests: the fraction is null ("n/a"), never 0.
  for (const auto& t : j) {
    EXPECT_EQ(t.at("roofline_bounds_ts").size(), 2u);
    EXPECT_TRUE(t.at("roofline_fraction").is_null());
    EXPECT_TRUE(t.at("kernel_cache").is_null());
    EXPECT_GE(t.at("threads").get<int>(), 1);
  }
  // Memory: the packed weights are every linear in 16-row panels (k padded to even for bf16),
  // and the budget is issue 6's 1.1 x (packed weights + KV cache + 64 MiB).
  const ModelConfig cfg = load_model_config(model);
  const DType dt = parse_dtype(j[0].at("dtype").get<std::string>());
  auto packed = [&](int n, int k) {
    const double kp = dt == DType::BF16 ? (k + 1) / 2 * 2 : k;
    return (n + 15) / 16 * 16 * kp * static_cast<double>(dtype_size(dt));
  };
  const int e = cfg.emb_dim, q = cfg.n_heads * cfg.head_dim, kv = cfg.n_kv_heads * cfg.head_dim;
  const double layer = packed(q, e) + 2 * packed(kv, e) + packed(e, q) + 2 * packed(cfg.hidden_dim, e) +
                       packed(e, cfg.hidden_dim);
  const double want_mib = (layer * cfg.n_layers + packed(cfg.vocab_size, e)) / (1 << 20);
  EXPECT_NEAR(j[0].at("packed_weight_mib").get<double>(), want_mib, 1e-9);
  // bench sizes the cache for the longest test (16), the engine adds a spare slot.
  const double kv_mib = 2.0 * cfg.n_layers * kv * 4.0 * 17 / (1 << 20);
  // A tied model gathers its embeddings from the packed lm_head: no table beside it.
  ASSERT_TRUE(cfg.tie_word_embeddings);
  EXPECT_EQ(j[0].at("embedding_table_mib").get<double>(), 0.0);
  EXPECT_NEAR(j[0].at("memory_budget_mib").get<double>(), 1.1 * (want_mib + kv_mib + 64), 1e-3);
  EXPECT_GT(j[0].at("peak_rss_mib").get<double>(), 0);
}

// Where tokens are looked up in the checkpoint's embedding table (an untied model; a tied
// one whose lm_head is quantized), the budget holds that table, [vocab, emb] in its stored
// dtype: the budget is 1.1 x (packed weights + table + KV cache + 64 MiB).
TEST(CliBench, TheBudgetHoldsTheEmbeddingTableWhereTokensAreLookedUpInIt) {
  struct Case {
    std::string model;
    std::vector<std::string> flags;
  };
  const std::vector<Case> cases = {{shared_path("models/synthetic/mistral-tiny").string(), {}},
                                   {shared_path("models/stories260K").string(), {"--dtype", "q8_0", "--quantize-lm-head", "q8_0"}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.model);
    std::vector<std::string> args = {"bench", c.model, "-p", "4", "-n", "2", "-r", "1", "-t", "1", "-o", "json",
                                     "--no-roofline"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    auto r = run_llmport(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_FALSE(j.empty());
    const ModelConfig cfg = load_model_config(c.model);
    const WeightStore ws = WeightStore::open(c.model, cfg);
    const TensorView& embed = ws.get(TensorRole::Embed);
    EXPECT_EQ(embed.nbytes, static_cast<std::size_t>(cfg.vocab_size) * cfg.emb_dim * dtype_size(embed.dtype));
    const double embed_mib = static_cast<double>(embed.nbytes) / (1 << 20);
    EXPECT_NEAR(j[0].at("embedding_table_mib").get<double>(), embed_mib, 1e-9);
    const double kv_mib = 2.0 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4.0 * 5 / (1 << 20);
    EXPECT_NEAR(j[0].at("memory_budget_mib").get<double>(),
                1.1 * (j[0].at("packed_weight_mib").get<double>() + embed_mib + kv_mib + 64), 1e-3);
  }
}

// The kernel probe's first measurement on a machine (a stream of 2 x 4 x L3 of its own) is the
// machine's, not the model's: it ran inside the timed load and the peak RSS, and put
// stories260K's first bench OVER BUDGET (87 MiB of 72).
TEST(CliBench, TheFirstProbeOnAMachineIsNotChargedToTheModel) {
  TempDir t;
  const std::vector<std::string> args = {"bench", shared_path("models/stories260K").string(), "-p", "4", "-n", "2",
                                         "-r", "1", "-t", "1", "-o", "json", "--no-roofline"};
  // ASan's quarantine keeps freed blocks resident (up to 256 MiB), so in a sanitizer build
  // the probe's freed buffers would still count at the peak-RSS reset; without a quarantine
  // they are unmapped on free, as glibc does. Other builds ignore ASAN_OPTIONS.
  const char* asan = std::getenv("ASAN_OPTIONS");
  ScopedEnv no_quarantine("ASAN_OPTIONS", std::string(asan ? asan : "") + (asan && *asan ? ":" : "") +
                                              "quarantine_size_mb=0:thread_local_quarantine_size_kb=0");
  // The same bench without a probe: the model's own peak (a sanitizer build inflates both).
  auto off = run_llmport(args);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const double rss_off = nlohmann::json::parse(off.out)[0].at("peak_rss_mib").get<double>();
  ScopedEnv probe("LLMPORT_PROBE", "1"), cache("LLMPORT_PROBE_CACHE", t.path().string());
  auto r = run_llmport(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A probe disturbed by the tests running beside it caches nothing but says so.
  const bool disturbed = r.err.find("was timed while other work held the cores") != std::string::npos;
  ASSERT_TRUE(disturbed || !std::filesystem::is_empty(t.path()))
      << "the probe did not run (nothing cached, no disturbed-probe warning): " << r.err;
  // The probe streams 2 x 4 x L3 of its own weights (>= 64 MiB); charged to the model it
  // would show as that much more.
  EXPECT_LT(nlohmann::json::parse(r.out)[0].at("peak_rss_mib").get<double>(), rss_off + 16) << r.out;
}

// A quantized bench: the reports name the dtype, the packed weights shrink with the block
// format, and the decode bound's bytes per token are the quantization plan's (the figure
// `check --dtype` prints), not the base dtype's.
TEST(CliBench, QuantizedDtypesBenchWithThePlansBytes) {
  const auto model = shared_path("models/stories260K").string();
  std::map<std::string, double> packed;
  for (const char* dtype : {"fp32", "q8_0", "q4_0"}) {
    SCOPED_TRACE(dtype);
    auto r = run_llmport({"bench", model, "-p", "8", "-n", "2", "-r", "1", "-t", "1", "-o", "json",
                          "--no-roofline", "--dtype", dtype});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_FALSE(j.empty());
    EXPECT_EQ(j[0].at("dtype"), dtype);
    packed[dtype] = j[0].at("packed_weight_mib").get<double>();
  }
  EXPECT_LT(packed["q8_0"], packed["fp32"]);
  EXPECT_LT(packed["q4_0"], packed["q8_0"]);
  auto plan = run_llmport({"check", model, "--json", "--dtype", "q4_0"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const double bytes = nlohmann::json::parse(plan.out).at("quantization").at("bytes_per_token").get<double>();
  auto roof = run_llmport({"bench", model, "--roofline", "-o", "json", "-t", "1", "--dtype", "q4_0"});
  ASSERT_EQ(roof.exit_code, 0) << roof.err;
  const auto rj = nlohmann::json::parse(roof.out);
  EXPECT_EQ(rj.at("dtype"), "q4_0");
  EXPECT_NEAR(rj.at("weight_mib").get<double>(), bytes / (1 << 20), 1e-9);
  // Its prefill bound is the better of the int8 dot and fp32 FMA peaks measured here (the
  // GEMM runs either way), never the bf16 one.
  const auto& roof_j = rj.at("roofline");
  const double int8 = roof_j.at("int8_gops").get<double>(), f32 = roof_j.at("f32_gflops").get<double>();
  EXPECT_GT(int8, 0);
  EXPECT_EQ(roof_j.at("compute_peak_gflops").get<double>(), std::max(int8, f32));
  EXPECT_EQ(roof_j.at("compute_peak"), int8 >= f32 ? "int8_dot" : "fp32_fma");
  EXPECT_EQ(run_llmport({"bench", model, "--dtype", "q5_0", "--no-roofline"}).exit_code, 2);
  EXPECT_EQ(run_llmport({"bench", model, "--quantize-lm-head", "q8_0", "--no-roofline"}).exit_code, 2);
}

// A quantized plan's unquantized tensors keep the engine's base dtype: the config's
// torch_dtype, else what the checkpoint stores. stories260K stores fp32; without its
// torch_dtype line `check --dtype` used to assume bf16 and halve the kept tensors' bytes.
TEST(CliCheck, AQuantizedPlanWithoutTorchDtypeKeepsTheStoredDtype) {
  const auto model = shared_path("models/stories260K");
  TempDir dir;
  std::filesystem::copy_file(model / "model.safetensors", dir.path() / "model.safetensors");
  auto cfg = nlohmann::json::parse(read_file(model / "config.json"));
  ASSERT_EQ(cfg.at("torch_dtype"), "float32");
  cfg.erase("torch_dtype");
  write_file(dir.path() / "config.json", cfg.dump());
  std::map<std::string, nlohmann::json> plan;
  for (const auto& [name, dir_of] : {std::pair{"stated", model}, std::pair{"unstated", dir.path()}}) {
    auto r = run_llmport({"check", dir_of.string(), "--json", "--dtype", "q8_0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    plan[name] = nlohmann::json::parse(r.out).at("quantization");
  }
  EXPECT_EQ(plan["unstated"].at("base_dtype"), "fp32");
  EXPECT_EQ(plan["unstated"].at("base_bytes_per_token"), plan["stated"].at("base_bytes_per_token"));
  EXPECT_EQ(plan["unstated"].at("bytes_per_token"), plan["stated"].at("bytes_per_token"));
  // The kept fp32 embedding: 512 x 64 x 4 bytes.
  EXPECT_EQ(plan["unstated"].at("kept").at(0).at("bytes"), 512 * 64 * 4);
}

// -t 1,2 (llama-bench's thread list): one run per count, every test at each, in one JSON
// array; the markdown ends with each test's scaling over the first count; a bad item of the
// list is a usage error naming it.
TEST(CliBench, ThreadListRunsEveryTestAtEachCount) {
  const auto model = shared_path("models/stories260K").string();
  auto r = run_llmport({"bench", model, "-p", "8", "-n", "2", "-r", "1", "-t", "1,2", "-o", "json", "--no-roofline"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 4u);
  std::vector<std::pair<int, std::string>> rows;
  for (const auto& row : j) rows.emplace_back(row.at("threads").get<int>(), row.at("test").get<std::string>());
  EXPECT_EQ(rows, (std::vector<std::pair<int, std::string>>{{1, "pp8"}, {1, "tg2"}, {2, "pp8"}, {2, "tg2"}}));
  auto md = run_llmport({"bench", model, "-p", "8", "-n", "2", "-r", "1", "-t", "1,2", "--no-roofline"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("thread scaling (tokens/s over 1 thread(s)):\n  pp8: 2 threads "), std::string::npos)
      << md.out;
  // With the roofline, the bounds' own ratio stands beside the tokens/s ratio: the mean
  // bounds each run prints ("pp8: bound X tokens/s"), 2 threads over 1.
  auto roof = run_llmport({"bench", model, "-p", "8", "-n", "0", "-r", "1", "-t", "1,2"});
  ASSERT_EQ(roof.exit_code, 0) << roof.err;
  std::vector<double> bounds;
  for (std::size_t at = 0; (at = roof.out.find("\npp8: bound ", at)) != std::string::npos; ++at)
    bounds.push_back(std::stod(roof.out.substr(at + 12)));
  ASSERT_EQ(bounds.size(), 2u) << roof.out;
  const std::string want = "]):\n  pp8: 2 threads ";
  const auto line_at = roof.out.find(want);
  ASSERT_NE(line_at, std::string::npos) << roof.out;
  const std::string line = roof.out.substr(line_at + 4, roof.out.find('\n', line_at + 4) - line_at - 4);
  // Printed to 2 decimals from the unrounded bounds: within half a unit of the last digit.
  const auto b = line.find(" [bound ");
  ASSERT_NE(b, std::string::npos) << line;
  EXPECT_TRUE(line.ends_with("x]")) << line;
  EXPECT_NEAR(std::stod(line.substr(b + 8)), bounds[1] / bounds[0], 0.0051) << line;
  auto bad = run_llmport({"bench", model, "-t", "1,x", "--no-roofline"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("'x'"), std::string::npos) << bad.err;
}

// With the roofline, each repetition has its own bound (re-measured next to it) and
// roofline_fraction is the mean of sample / bound over the repetitions.
TEST(CliBench, FractionIsMeanOfPerRepetitionRatios) {
  const auto model = shared_path("models/stories260K").string();
  auto r = run_llmport({"bench", model, "-p", "8", "-n", "4", "-r", "3", "-t", "1", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  for (const auto& t : j) {
    const auto& s = t.at("samples_ts");
    const auto& b = t.at("roofline_bounds_ts");
    ASSERT_EQ(s.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    double f = 0, mean_b = 0;
    for (int i = 0; i < 3; ++i) {
      ASSERT_GT(b[i].get<double>(), 0) << t.at("test");
      f += s[i].get<double>() / b[i].get<double>() / 3;
      mean_b += b[i].get<double>() / 3;
    }
    EXPECT_NEAR(t.at("roofline_fraction").get<double>(), f, 1e-9 * f);
    EXPECT_NEAR(t.at("roofline_bound_ts").get<double>(), mean_b, 1e-9 * mean_b);
    // tg re-measures its read every 32 tokens (decode_bound.hpp); pp only around repetitions.
    if (t.at("n_gen").get<int>() > 0)
      EXPECT_EQ(t.at("roofline_segment_tokens"), 32) << t.at("test");
    else
      EXPECT_TRUE(t.at("roofline_segment_tokens").is_null()) << t.at("test");
  }
}

// A prompt may fill the whole context (stories260K: 512), and a kernel cache reports
// what it packed and, on the second start, what it hit.
TEST(CliBench, FullContextPromptAndKernelCacheReport) {
  const auto model = shared_path("models/stories260K").string();
  const ModelConfig cfg = load_model_config(model);
  TempDir dir;
  const std::string cache = (dir.path() / "kc").string();
  const std::vector<std::string> args = {"bench", model, "-p", std::to_string(cfg.max_position_embeddings),
                                         "-n", "0", "-r", "1", "-t", "1", "-o", "json",
                                         "--no-roofline", "--kernel-cache", cache};
  const int n_linears = 7 * cfg.n_layers + 1;
  for (int run = 0; run < 2; ++run) {
    auto r = run_llmport(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0].at("n_prompt"), cfg.max_position_embeddings);
    EXPECT_EQ(j[0].at("kernel_cache").at("hits"), run == 0 ? 0 : n_linears);
    EXPECT_EQ(j[0].at("kernel_cache").at("packed"), run == 0 ? n_linears : 0);
  }
}

// A directory where one entry's file belongs: the run still works with that weight packed
// afresh, the counts say it was packed but not written, one warning names the path, and the
// user's directory is left as it was.
TEST(CliBench, ADirectoryInTheKernelCacheIsReportedNotReplaced) {
  const auto model = shared_path("models/stories260K").string();
  const ModelConfig cfg = load_model_config(model);
  TempDir dir;
  const auto cache = dir.path() / "kc";
  std::vector<std::string> args = {"bench", model, "-p", "16", "-n", "2", "-r", "1", "-t", "1", "-o", "json",
                                   "--no-roofline", "--kernel-cache", cache.string()};
  const int n_linears = 7 * cfg.n_layers + 1;
  auto first = run_llmport(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.err.find("kernel cache"), std::string::npos) << first.err;
  const auto entry = std::filesystem::directory_iterator(cache)->path();
  std::filesystem::remove(entry);
  std::filesystem::create_directories(entry / "sub");
  auto r = run_llmport(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto kc = nlohmann::json::parse(r.out)[0].at("kernel_cache");
  EXPECT_EQ(kc.at("hits"), n_linears - 1);
  EXPECT_EQ(kc.at("packed"), 1);
  EXPECT_EQ(kc.at("written"), 0);
  EXPECT_EQ(kc.at("not_written"), 1);
  EXPECT_NE(r.err.find("warning: kernel cache " + entry.string() +
                       ": cannot write (a directory is in its place, not a file; it was not replaced)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n') - std::count(first.err.begin(), first.err.end(), '\n'), 1)
      << r.err;
  EXPECT_TRUE(std::filesystem::is_directory(entry / "sub"));
  // The markdown line says the same.
  args[11] = "md";
  auto md = run_llmport(args);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find(fmt::format("(kernel cache: {} hits, 0 packed and written, 1 packed but not written)",
                                    n_linears - 1)),
            std::string::npos)
      << md.out;
}

TEST(CliBench, BadInputExits2) {
  const auto model = shared_path("models/stories260K").string();
  EXPECT_EQ(run_llmport({"bench", model, "-o", "xml"}).exit_code, 2);
  EXPECT_EQ(run_llmport({"bench", model, "-p", "abc"}).exit_code, 2);
  EXPECT_EQ(run_llmport({"bench", model, "-r", "0"}).exit_code, 2);
  const auto neg_gen = run_llmport({"bench", model, "-n", "-1", "--no-roofline"});
  EXPECT_EQ(neg_gen.exit_code, 2);
  EXPECT_NE(neg_gen.err.find("-n/--n-gen must be >= 0"), std::string::npos) << neg_gen.err;
  const auto neg_threads = run_llmport({"bench", model, "-t", "-2", "--no-roofline"});
  EXPECT_EQ(neg_threads.exit_code, 2);
  EXPECT_NE(neg_threads.err.find("--threads: must be a whole number from 0"), std::string::npos) << neg_threads.err;
  EXPECT_EQ(run_llmport({"bench", "/nonexistent/model"}).exit_code, 2);
  EXPECT_EQ(run_llmport({"bench", model, "-p", "100000", "--no-roofline"}).exit_code, 2);
  // A thread count far beyond the machine is a usage error, not 100000 threads.
  EXPECT_EQ(run_llmport({"bench", model, "-t", "100000", "--no-roofline"}).exit_code, 2);
  EXPECT_EQ(run_llmport({"run", model, "--prompt", "Once", "-n", "2", "-t", "100000"}).exit_code, 2);
  EXPECT_EQ(run_llmport({"bench", model, "-p", "16,,32", "--no-roofline"}).exit_code, 2);
  EXPECT_EQ(run_llmport({"bench", model, "-p", "16,", "--no-roofline"}).exit_code, 2);
  EXPECT_EQ(run_llmport({"bench", model, "-p", "0", "-n", "0"}).exit_code, 2);
  EXPECT_EQ(run_llmport({"bench", model, "--roofline", "--no-roofline"}).exit_code, 2);
  TempDir dir;
  EXPECT_EQ(run_llmport({"bench", model, "-p", "8", "-n", "1", "--no-roofline", "--registry",
                         (dir.path() / "missing").string()})
                .exit_code,
            2);
  EXPECT_EQ(run_llmport({"kernels", "sweep", model, "--decode", "--registry", dir.path().string(),
                         "--reps", "0"})
                .exit_code,
            2);
  EXPECT_EQ(run_llmport({"kernels", "sweep", model, "--prefill", "--registry", dir.path().string(),
                         "--prefill-m", "100000"})
                .exit_code,
            2);
  // A prefill GEMM has >= 2 rows (m = 1 is the decode GEMV): --prefill-m 1 is a usage
  // error naming the option, not a failed validation.
  const auto m1 = run_llmport({"kernels", "validate", model, "--prefill-m", "1"});
  EXPECT_EQ(m1.exit_code, 2) << m1.err;
  EXPECT_NE(m1.err.find("--prefill-m"), std::string::npos) << m1.err;
  const auto m2 = run_llmport({"kernels", "validate", model, "--prefill-m", "2", "--threads", "1"});
  EXPECT_EQ(m2.exit_code, 0) << m2.out << m2.err;
}

}  // namespace
}  // namespace llmport::test
