// `llmport bench MODEL [-p 128,512] [-n 128] [-r 3] [-t 2] [--dtype bf16] [-o md|json|csv]
// [--roofline] [--registry DIR] [--kernel-cache DIR]`: llama-bench style prompt
// processing (ppN) and text generation (tgN) throughput, mean +- stddev tokens/s over
// repetitions, each with its fraction of this machine's roofline measured in the same run.
#include <chrono>
#include <memory>
#include <optional>
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/bench_compare.hpp"
#include "cli/command.hpp"
#include "cli/decode_bound.hpp"
#include "cli/engine_flags.hpp"
#include "cli/option_checks.hpp"
#include "llmport/engine.hpp"
#include "llmport/generate.hpp"
#include "llmport/kernel_probe.hpp"
#include "llmport/error.hpp"
#include "llmport/model_config.hpp"
#include "llmport/registry.hpp"
#include "llmport/quant_plan.hpp"
#include "llmport/roofline.hpp"
#include "llmport/weights.hpp"

namespace llmport::cli {
namespace {

struct BArgs {
  std::string model, prompts = "512", dtype, output = "md", registry, kernel_cache, quantize_lm_head;
  std::string compare;  // llama-bench -o json results to print beside ours
  std::string backend = "cpu";
  int n_gen = 128, reps = 3, threads = 0;  // threads: the run being measured (one of thread_list)
  std::vector<int> thread_list{0};          // -t 1,2: one run per count (llama-bench's -t list)
  bool roofline_only = false, no_roofline = false;
};

struct TestResult {
  std::string test;
  int n_prompt = 0, n_gen = 0;
  std::vector<double> samples;  // tokens/s
  std::vector<double> bounds;   // tokens/s bound of each repetition (interleaved roofline)
  double avg = 0, stddev = 0;
  double bound = 0;        // mean of `bounds`
  double fraction = 0;     // mean of samples[r] / bounds[r]
  double start_bound = 0;  // bound from the roofline measured at the start of the run
};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// -p's lengths: a list comma_list(whole_in(0, kMaxPrompt)) accepted when it was given (the
// default "512" is not checked); 0 means no prefill test (llama-bench).
constexpr int kMaxPrompt = 1 << 20;
std::vector<int> prompt_lengths(const std::string& s) {
  std::vector<int> out;
  for (const std::string& t : split_commas(s))
    if (const int v = std::stoi(t); v > 0) out.push_back(v);
  return out;
}

double peak_rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// Resets the peak RSS (VmHWM) to the current RSS (Linux >= 4.0), so the reported peak is that
// of the model run, not of the roofline's 512 MiB read buffer freed before it. Best effort.
void reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  if (out) out << "5";
}

void finish(TestResult& t) {
  double s = 0;
  for (double v : t.samples) s += v;
  t.avg = t.samples.empty() ? 0 : s / t.samples.size();
  double q = 0;
  for (double v : t.samples) q += (v - t.avg) * (v - t.avg);
  t.stddev = t.samples.size() > 1 ? std::sqrt(q / (t.samples.size() - 1)) : 0;
  double b = 0, f = 0;
  for (std::size_t r = 0; r < t.samples.size() && r < t.bounds.size(); ++r) {
    b += t.bounds[r];
    f += t.bounds[r] > 0 ? t.samples[r] / t.bounds[r] : 0;
  }
  t.bound = t.bounds.empty() ? 0 : b / t.bounds.size();
  t.fraction = t.bounds.empty() ? 0 : f / t.bounds.size();
}

// `reps` timed repetitions (rep() returns tokens/s), each bounded by the larger of the
// bounds measured right before and right after it, then the summary statistics.
template <class Bound, class Rep>
void run_reps(TestResult& t, int reps, Bound&& bound_now, Rep&& rep) {
  double before = bound_now();
  for (int r = 0; r < reps; ++r) {
    t.samples.push_back(rep());
    const double after = bound_now();
    t.bounds.push_back(std::max(before, after));
    before = after;
  }
  finish(t);
}

// What a run measures, decided before any weights are read: the flags are checked first,
// so a usage mistake never waits for the roofline or the weights.
struct Plan {
  std::string dir;   // the model directory (or its config.json)
  std::string name;  // the model's name in the reports: its directory's
  ModelConfig cfg;
  DType dtype = DType::BF16;       // weights' dtype (a quantized model's unquantized tensors)
  QuantType quant = QuantType::None, quant_lm_head = QuantType::None;
  std::string precision;           // the reports' dtype column: bf16, q8_0, ...
  ModelCost cost;
  std::vector<int> pps;  // prompt lengths of the pp tests
  std::vector<LlamaBenchRow> llama;  // --compare FILE
};

// --kernel-cache DIR is found or made before anything is measured: a file in its place
// (or a directory that cannot be made) is reported at once, not after the roofline and
// the weights. Only the cpu backend keeps packed weights (bench_kernels warns otherwise).
void prepare_kernel_cache(const BArgs& a) {
  if (a.kernel_cache.empty() || a.backend != "cpu" || a.roofline_only) return;
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(a.kernel_cache, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_directory(st))
    throw UsageError("--kernel-cache " + a.kernel_cache + ": is not a directory (expected the packed-weight cache directory)");
  std::filesystem::create_directories(a.kernel_cache, ec);
  if (ec || !std::filesystem::is_directory(a.kernel_cache))
    throw UsageError("--kernel-cache " + a.kernel_cache + ": cannot create the directory" +
                     (ec ? " (" + ec.message() + ")" : std::string()));
}

Plan plan_bench(const BArgs& a) {
  if (a.reps < 1) throw UsageError("-r/--repetitions must be >= 1");
  if (a.n_gen < 0) throw UsageError("-n/--n-gen must be >= 0 (0 = no generation test)");
  if (a.output != "md" && a.output != "json" && a.output != "csv")
    throw UsageError("-o/--output must be md, json or csv (got '" + a.output + "')");
  Plan p;
  p.pps = prompt_lengths(a.prompts);
  if (p.pps.empty() && a.n_gen == 0 && !a.roofline_only)
    throw UsageError("nothing to measure: -p/--n-prompt and -n/--n-gen are both 0");
  if (a.roofline_only && a.no_roofline)
    throw UsageError("--roofline and --no-roofline exclude each other");
  if (!a.registry.empty() && !std::filesystem::is_directory(a.registry))
    throw UsageError("--registry " + a.registry +
                     ": not a directory (a kernel registry, e.g. <deployment>/registry)");
  prepare_kernel_cache(a);
  if (!a.compare.empty()) p.llama = read_llama_bench(a.compare);
  p.dir = resolve_model_dir(a.model);
  p.cfg = load_model_config(p.dir);
  const EngineOptions prec = engine_options_from_flags({"cpu", 0, dtype_flag(a.dtype), "", "", a.quantize_lm_head});
  p.quant = prec.quant;
  p.quant_lm_head = prec.quant_lm_head;
  p.dtype = prec.dtype ? *prec.dtype : dtype_or_config("", p.cfg);
  p.precision = precision_name(p.dtype, p.quant);
  p.cost = model_cost(p.cfg, p.dtype);
  // A quantized model's decode reads its blocks and scales plus the tensors kept in the
  // base dtype: the plan's bytes per token (llmport check --dtype shows the same figure).
  if (p.quant != QuantType::None)
    p.cost.weight_bytes =
        static_cast<double>(plan_quantization(p.cfg, p.dtype, p.quant, p.quant_lm_head).bytes_per_token);
  // The model's name: its directory (also when MODEL names its config.json).
  std::filesystem::path mdir = std::filesystem::absolute(p.dir).lexically_normal();
  if (std::filesystem::is_regular_file(mdir) || mdir.filename().empty()) mdir = mdir.parent_path();
  p.name = mdir.filename().string();
  return p;
}

// --roofline: this machine's bounds for the model, without running it.
int print_roofline(const BArgs& a, const Plan& p, const Roofline& roof, const ComputePeak& peak) {
  const int pp_roof = p.pps.empty() ? 512 : p.pps.front();
  const double decode_bound = decode_bound_tps(roof, p.cost, a.n_gen / 2);
  const double prefill_bound = prefill_bound_tps(roof, p.cost, p.dtype, pp_roof, p.quant);
  if (a.output == "json") {
    std::cout << nlohmann::json{{"model", p.name},
                                {"dtype", p.precision},
                                {"roofline", {{"threads", roof.threads}, {"isa", roof.isa},
                                              {"read_gbps", roof.read_gbps},
                                              {"read_gbps_1t", roof.read_gbps_1t},
                                              {"bf16_gflops", roof.bf16_gflops},
                                              {"f32_gflops", roof.f32_gflops},
                                              {"int8_gops", roof.int8_gops},
                                              {"compute_peak_gflops", peak.gflops},
                                              {"compute_peak", peak.kind}}},
                                {"weight_mib", p.cost.weight_bytes / (1 << 20)},
                                {"decode_bound_ts", decode_bound},
                                {"n_gen", a.n_gen},
                                {"prefill_bound_ts", prefill_bound},
                                {"n_prompt", pp_roof}}
                     .dump(1)
              << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("roofline ({} threads, {}):\n", roof.threads, roof.isa)
            << fmt::format("  memory read: {:.1f} GB/s (1 thread {:.1f} GB/s)\n", roof.read_gbps,
                           roof.read_gbps_1t)
            << fmt::format("  bf16 peak:   {:.1f} GFLOP/s\n  fp32 peak:   {:.1f} GFLOP/s\n"
                           "  int8 peak:   {:.1f} GOP/s\n",
                           roof.bf16_gflops, roof.f32_gflops, roof.int8_gops)
            << fmt::format("  compute peak for {} weights: {:.1f} GFLOP/s ({})\n", p.precision,
                           peak.gflops, peak.kind)
            << fmt::format("model {} ({}): {:.1f} MiB weights, {:.2f} GFLOP per decode token\n", p.name,
                           p.precision, p.cost.weight_bytes / (1 << 20),
                           p.cost.flops_per_token * 1e-9)
            << fmt::format("  decode bound (tg{}, mean context {}): {:.1f} tokens/s\n", a.n_gen,
                           a.n_gen / 2, decode_bound)
            << fmt::format("  prefill bound (pp{}): {:.1f} tokens/s\n", pp_roof, prefill_bound);
  return kExitOk;
}

// KV positions the tests use: a pp test p, a tg test n_gen (from an empty cache), the
// warmup min(8, need - 1) + 1: a prompt may fill the whole context.
int kv_positions(const BArgs& a, const Plan& p) {
  int need = std::max(2, a.n_gen);
  for (int pp : p.pps) need = std::max(need, pp);
  const int ctx = model_context(p.cfg);
  if (ctx > 0 && need > ctx)
    throw UsageError(fmt::format("bench: {} tokens exceed the model context of {}", need, ctx));
  return need;
}

// The shipped registry (and --registry first); with --kernel-cache, the packed weights
// are read from / written to that directory, so a second run measures a warm load.
std::shared_ptr<KernelSelection> bench_kernels(const BArgs& a, const std::vector<int>& pps) {
  auto sel = std::make_shared<KernelSelection>();
  if (!a.registry.empty())
    sel->registry = std::make_shared<KernelRegistry>(KernelRegistry::shipped_dir("cpu"), std::filesystem::path(a.registry));
  else
    sel->registry = std::make_shared<KernelRegistry>(KernelRegistry::shipped_dir("cpu"), std::nullopt);
  if (!a.kernel_cache.empty()) {
    if (a.backend != "cpu") {
      std::cerr << "warning: --kernel-cache: the " << a.backend
                << " backend keeps no packed weights; ignored\n";
    } else {
      sel->cache_dir = a.kernel_cache;  // made by prepare_kernel_cache before any measurement
    }
  }
  int max_pp = 0;
  for (int pp : pps) max_pp = std::max(max_pp, pp);
  sel->prefill_m = max_pp > 0 ? max_pp : 512;  // the prefill GEMM is tuned for the longest test
  return sel;
}

// Random token ids from a fixed seed: every run feeds the same tokens, in the same order.
struct RandomTokens {
  std::mt19937 rng{1234};
  std::uniform_int_distribution<int> dist;
  explicit RandomTokens(int vocab) : dist(0, vocab - 1) {}
  int next() { return dist(rng); }
  std::vector<int> ids(int n) {
    std::vector<int> v(n);
    for (auto& x : v) x = next();
    return v;
  }
};

// One pp repetition: a fresh prompt of p tokens into an empty cache; tokens/s.
double prefill_repetition(Engine& eng, RandomTokens& toks, int p) {
  const auto prompt = toks.ids(p);
  eng.reset();
  const double t0 = now();
  eng.prefill(prompt);
  return p / (now() - t0);
}

// What the tests need beside the engine: the start-of-run roofline, whether each
// repetition re-measures its bound, and the token source.
struct Bench {
  const BArgs& a;
  const Plan& p;
  const Roofline& roof;
  bool interleave;
  Engine& eng;
  RandomTokens& toks;
};

TestResult measure_prefill(Bench& b, int p) {
  TestResult t;
  t.test = "pp" + std::to_string(p);
  t.n_prompt = p;
  const double flops_per_tok = prefill_flops(b.p.cost, p) / p;
  auto bound_now = [&] {
    return b.interleave ? measure_compute_peak(b.a.threads, b.p.dtype, b.p.quant).gflops * 1e9 / flops_per_tok
                        : prefill_bound_tps(b.roof, b.p.cost, b.p.dtype, p, b.p.quant);
  };
  {  // untimed warmup at the test's size (as llama-bench): buffers grown, pages touched
    b.eng.reset();
    b.eng.prefill(b.toks.ids(p));
  }
  run_reps(t, b.a.reps, bound_now, [&] { return prefill_repetition(b.eng, b.toks, p); });
  t.start_bound = prefill_bound_tps(b.roof, b.p.cost, b.p.dtype, p, b.p.quant);
  return t;
}

// tg: n_gen single-token decode steps from an empty cache per repetition, timed in
// segments (segment_starts) with the read bound re-measured, untimed, between them: each
// segment is bounded by the larger of the measurements around it at its own mean context,
// the repetition by segmented_bound_tps. Without an in-place measurement the bound is the
// start-of-run roofline's.
TestResult measure_decode(Bench& b) {
  const int n_gen = b.a.n_gen;
  TestResult t;
  t.test = "tg" + std::to_string(n_gen);
  t.n_gen = n_gen;
  t.start_bound = decode_bound_tps(b.roof, b.p.cost, n_gen / 2);
  auto gbps_now = [&] { return b.interleave ? b.eng.weight_read_gbps(2) : 0.0; };
  auto bound_at = [&](double gbps, double ctx) {
    return gbps > 0 ? gbps * 1e9 / (b.p.cost.weight_bytes + b.p.cost.kv_bytes_per_pos * ctx)
                    : decode_bound_tps(b.roof, b.p.cost, static_cast<int>(ctx));
  };
  const std::vector<int> starts = segment_starts(n_gen);
  double before = gbps_now();
  for (int r = 0; r < b.a.reps; ++r) {
    b.eng.reset();
    int next = b.toks.next();
    std::vector<DecodeSegment> segments;
    double seconds = 0;
    for (std::size_t s = 0; s + 1 < starts.size(); ++s) {
      const double t0 = now();
      for (int i = starts[s]; i < starts[s + 1]; ++i) b.eng.decode_step(next), next = b.toks.next();
      const double dt = now() - t0;
      const double after = gbps_now();
      segments.push_back({starts[s + 1] - starts[s], dt,
                          bound_at(std::max(before, after), 0.5 * (starts[s] + starts[s + 1]))});
      seconds += dt;
      before = after;
    }
    t.samples.push_back(n_gen / seconds);
    t.bounds.push_back(segmented_bound_tps(segments));
  }
  finish(t);
  return t;
}

// This machine is shared: its memory bandwidth and free cores move by 2x within minutes.
// So each repetition gets its own bound, measured right before and right after it (the
// better of the two: the stricter bound; tg: around each segment of the repetition, see
// measure_decode), and roofline_fraction is the mean of the per-repetition ratios. tg:
// the backend streams this model's own packed weights in
// place (Engine::weight_read_gbps); pp: the compute peak for the weight dtype. Without
// those (reference backend, --no-roofline) the start-of-run roofline is the bound.
std::vector<TestResult> measure_tests(Bench& b, int need) {
  {  // warmup: page in, spin up threads
    b.eng.reset();
    const int n = std::min(8, need - 1);
    // A model whose logits are NaN/Inf (a NaN weight) is broken: its timings would be
    // printed as if it worked, so the run stops here as `run` does (GateError: exit 1).
    check_finite_logits(b.eng.prefill(b.toks.ids(n)), 0, n - 1);
    check_finite_logits(b.eng.decode_step(b.toks.next()), 1, n);
  }
  std::vector<TestResult> results;
  for (int p : b.p.pps) results.push_back(measure_prefill(b, p));
  if (b.a.n_gen > 0) results.push_back(measure_decode(b));
  return results;
}

// The run's facts every report format prints beside the tests.
struct RunFacts {
  std::string isa;
  int threads = 0;
  int need = 0;  // KV positions
  double load_s = 0, rss = 0;
  double packed_mib = 0, embedding_mib = 0, kv_mib = 0, budget_mib = 0;
  bool interleave = false;
  ComputePeak peak;
  const KernelSelection* sel = nullptr;
};

// A bound that was not measured (--no-roofline, reference backend) is "n/a", never 0%.
nlohmann::json fraction_json(const TestResult& t) {
  if (t.bound > 0) return t.fraction;
  return nullptr;
}

// --compare: llama.cpp's best tokens/s for the same test and threads (null when the file
// has none, or no file was given), and llmport's avg over it.
std::optional<double> llama_ts(const Plan& p, const RunFacts& f, const TestResult& t) {
  if (p.llama.empty()) return std::nullopt;
  return llama_bench_best(p.llama, t.n_prompt, t.n_gen, f.threads);
}
nlohmann::json llama_json(const Plan& p, const RunFacts& f, const TestResult& t) {
  const auto v = llama_ts(p, f, t);
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
nlohmann::json llama_ratio_json(const Plan& p, const RunFacts& f, const TestResult& t) {
  const auto v = llama_ts(p, f, t);
  return v ? nlohmann::json(t.avg / *v) : nlohmann::json(nullptr);
}

// The side-by-side table of --compare (markdown).
void print_compare(const BArgs& a, const Plan& p, const RunFacts& f, const std::vector<TestResult>& results) {
  std::cout << fmt::format("\nvs llama.cpp ({}; its best run of each test at {} threads):\n\n", a.compare, f.threads)
            << "| test | llama.cpp t/s | llmport t/s | llmport / llama.cpp |\n| --- | ---: | ---: | ---: |\n";
  for (const auto& t : results) {
    const auto v = llama_ts(p, f, t);
    std::cout << fmt::format("| {} | {} | {:.2f} | {} |\n", t.test, v ? fmt::format("{:.2f}", *v) : "-", t.avg,
                             v ? fmt::format("{:.2f}x", t.avg / *v) : "no llama-bench row for this test");
  }
}

nlohmann::json json_rows(const BArgs& a, const Plan& p, const Roofline& roof, const RunFacts& f,
                         const std::vector<TestResult>& results) {
  nlohmann::json cache_json = nullptr;
  if (!a.kernel_cache.empty())
    cache_json = {{"dir", a.kernel_cache}, {"hits", f.sel->cache_hits}, {"packed", f.sel->cache_misses},
                  {"written", f.sel->cache_misses - f.sel->cache_not_written},
                  {"not_written", f.sel->cache_not_written}};
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : results)
    arr.push_back({{"model", p.name}, {"backend", a.backend}, {"isa", f.isa}, {"threads", f.threads},
                   {"dtype", p.precision}, {"test", t.test},
                   {"n_prompt", t.n_prompt}, {"n_gen", t.n_gen}, {"avg_ts", t.avg},
                   {"stddev_ts", t.stddev}, {"samples_ts", t.samples},
                   {"roofline_fraction", fraction_json(t)},
                   {"roofline_bound_ts", t.bound > 0 ? nlohmann::json(t.bound) : nlohmann::json(nullptr)},
                   {"roofline_bounds_ts", t.bounds},
                   {"roofline_segment_tokens", t.n_gen > 0 && f.interleave ? nlohmann::json(kBoundSegmentTokens)
                                                                           : nlohmann::json(nullptr)},
                   {"roofline_fraction_start",
                    t.start_bound > 0 ? t.avg / t.start_bound : 0.0},
                   {"load_s", f.load_s}, {"kernel_cache", cache_json}, {"peak_rss_mib", f.rss},
                   {"packed_weight_mib", f.packed_mib}, {"embedding_table_mib", f.embedding_mib},
                   {"memory_budget_mib", f.budget_mib},
                   {"weight_mib", p.cost.weight_bytes / (1 << 20)},
                   {"kv_cache_mib", p.cost.kv_bytes_per_pos * f.need / (1 << 20)},
                   {"heuristic_configs", f.sel->heuristic_used.size()},
                   {"llama_cpp_ts", llama_json(p, f, t)},
                   {"vs_llama_cpp", llama_ratio_json(p, f, t)},
                   {"roofline", {{"threads", roof.threads}, {"read_gbps", roof.read_gbps},
                                 {"read_gbps_1t", roof.read_gbps_1t},
                                 {"bf16_gflops", roof.bf16_gflops},
                                 {"f32_gflops", roof.f32_gflops},
                                 {"int8_gops", roof.int8_gops},
                                 {"compute_peak_gflops", f.peak.gflops},
                                 {"compute_peak", f.peak.kind}}}});
  return arr;
}

// "kernel cache: 35 hits, 1 packed and written", and what was packed but not written (warned).
std::string cache_counts(const KernelSelection& sel) {
  std::string s = fmt::format("kernel cache: {} hits, {} packed and written", sel.cache_hits,
                              sel.cache_misses - sel.cache_not_written);
  if (sel.cache_not_written > 0) s += fmt::format(", {} packed but not written", sel.cache_not_written);
  return s;
}

void print_csv(const BArgs& a, const Plan& p, const RunFacts& f, const std::vector<TestResult>& results) {
  for (const auto& t : results)
    std::cout << fmt::format("{},{},{},{},{},{},{},{},{:.3f},{:.3f},{}\n", p.name, a.backend, f.isa,
                             f.threads, p.precision, t.test, t.n_prompt, t.n_gen, t.avg,
                             t.stddev, t.bound > 0 ? fmt::format("{:.4f}", t.fraction) : "");
}

// The markdown table (llama-bench's), then the lines that say what the fractions were
// measured against and whether the run stayed within its memory budget.
void print_markdown(const BArgs& a, const Plan& p, const Roofline& roof, const RunFacts& f,
                    const std::vector<TestResult>& results) {
  std::cout << "| model | size | backend | isa | threads | dtype | test | t/s | roofline |\n"
               "| --- | ---: | --- | --- | ---: | --- | ---: | ---: | ---: |\n";
  for (const auto& t : results)
    std::cout << fmt::format("| {} | {:.2f} GiB | {} | {} | {} | {} | {} | {:.2f} ± {:.2f} | {} |\n",
                             p.name, p.cost.weight_bytes / (1 << 30), a.backend, f.isa, f.threads,
                             p.precision, t.test, t.avg, t.stddev,
                             t.bound > 0 ? fmt::format("{:.0f}%", 100 * t.fraction) : "n/a");
  std::cout << "\n";
  if (f.interleave)
    std::cout << fmt::format("roofline: read {:.1f} GB/s ({} threads), bf16 {:.0f} GFLOP/s, fp32 {:.0f} "
                             "GFLOP/s, int8 {:.0f} GOP/s (pp bound uses {:.0f} GFLOP/s, {})\n",
                             roof.read_gbps, roof.threads, roof.bf16_gflops, roof.f32_gflops, roof.int8_gops,
                             f.peak.gflops, f.peak.kind);
  const std::string cache_text = a.kernel_cache.empty() ? std::string() : " (" + cache_counts(*f.sel) + ")";
  std::cout << fmt::format("load {:.2f} s{}; peak RSS {:.0f} MiB\n", f.load_s, cache_text, f.rss);
  if (f.interleave)
    for (const auto& t : results)
      std::cout << fmt::format("{}: bound {:.2f} tokens/s (mean of {} re-measured next to each "
                               "repetition{}); vs the start-of-run roofline {:.0f}%\n",
                               t.test, t.bound, t.bounds.size(),
                               t.n_gen > 0 ? fmt::format(": this model's packed weights streamed in place, "
                                                         "every {} tokens", kBoundSegmentTokens)
                                           : std::string(": compute peak"),
                               t.start_bound > 0 ? 100 * t.avg / t.start_bound : 0.0);
  std::cout << fmt::format("memory: peak RSS {:.0f} MiB of a {:.0f} MiB budget (1.1 x (packed weights "
                           "{:.0f} + embedding table {:.0f} + KV cache {:.0f} + 64 MiB)){}\n",
                           f.rss, f.budget_mib, f.packed_mib, f.embedding_mib, f.kv_mib,
                           f.rss > f.budget_mib ? ": OVER BUDGET" : "");
  for (const auto& t : results)
    if (t.fraction > 1.0) {
      // Above 100% the bound was not what limited the run: the bandwidth moved between the
      // bound's measurement and the repetition beside it (a GB-sized model cannot sit in a
      // cache; saying it did misled the reader), or a model small enough does sit in cache.
      std::cout << fmt::format("note: {} exceeds its roofline bound ({:.0f}%): the bound measured beside it "
                               "was lower than the rate the run reached, so the memory bandwidth moved between "
                               "the two (shared machines' does, up to 2x within minutes) or the model's {:.1f} "
                               "MiB of weights are served from CPU caches; compare fractions over several runs\n",
                               t.test, 100 * t.fraction, p.cost.weight_bytes / (1 << 20));
      break;
    }
  if (!f.sel->heuristic_used.empty())
    std::cout << fmt::format("note: {} kernel shape(s) ran with the heuristic default config "
                             "(not measured on this machine{})\n", f.sel->heuristic_used.size(),
                             f.sel->foreign_skipped > 0 ? fmt::format("; {} registry entries of another machine "
                                                                      "skipped", f.sel->foreign_skipped)
                                                        : "");
}

// One measured run at a.threads: its roofline, facts and tests.
struct BenchRun {
  Roofline roof;
  std::shared_ptr<KernelSelection> sel;
  RunFacts f;
  std::vector<TestResult> results;
};

BenchRun measure_run(const BArgs& a, const Plan& p) {
  BenchRun run;
  if (!a.no_roofline) run.roof = measure_roofline(a.threads);
  // The prefill bound's peak: the best any kernel path reaches for these weights.
  const ComputePeak peak = compute_peak(run.roof, p.dtype, p.quant);
  // The kernel probe (first use on this machine: ~0.3-0.7 s and a stream of 2 x 4 x L3 of its own) runs
  // before the load is timed and the peak RSS reset: it is the machine's, not the model's.
  if (a.backend == "cpu") (void)machine_kernel_probe();
  // Load time covers opening the weights and building the engine (packing, kernel cache).
  reset_peak_rss();
  const double t_open = now();
  const WeightStore weights = WeightStore::open(p.dir, p.cfg);
  EngineOptions opt = engine_options_from_flags({a.backend, a.threads, std::nullopt, /*registry=*/"", /*fault=*/"", /*quantize_lm_head=*/""});
  opt.dtype = p.dtype;  // as planned: a config without torch_dtype benches bf16
  opt.quant = p.quant;
  opt.quant_lm_head = p.quant_lm_head;
  const int need = kv_positions(a, p);
  opt.max_seq = need;
  run.sel = bench_kernels(a, p.pps);
  opt.kernels = run.sel;
  Engine eng(p.cfg, weights, opt);
  const double load_s = now() - t_open;

  RandomTokens toks(p.cfg.vocab_size);
  Bench b{a, p, run.roof, /*interleave=*/!a.no_roofline, eng, toks};
  run.results = measure_tests(b, need);

  RunFacts& f = run.f;
  f.rss = peak_rss_mib();
  // Issue 6's memory target: a run holds its packed weights, the KV cache and at most
  // 64 MiB of activations, scratch and code, within 10%; plus, where tokens are looked up
  // in the checkpoint's embedding table (untied, or a quantized lm_head), that table: the
  // one copy of a tensor the model needs, which any prompt may touch throughout.
  f.packed_mib = eng.weight_bytes() / double(1 << 20);
  f.embedding_mib = eng.embedding_table_bytes() / double(1 << 20);
  f.kv_mib = eng.kv_cache_bytes() / double(1 << 20);
  f.budget_mib = 1.1 * (f.packed_mib + f.embedding_mib + f.kv_mib + 64.0);
  f.isa = eng.backend().isa();
  f.threads = a.threads > 0 ? a.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  f.need = need;
  f.load_s = load_s;
  f.interleave = b.interleave;
  f.peak = peak;
  f.sel = run.sel.get();
  return run;
}

// With several thread counts: each test's tokens/s at every count over the first count's
// (the "2 threads >= 1.8x one thread on prefill" reads here), and beside it the same
// ratio of the bounds measured next to the repetitions: on a shared VM the second core is
// not always free, and a bound that did not scale says so.
void print_thread_scaling(const std::vector<BenchRun>& runs) {
  if (runs.size() < 2) return;
  const bool bounds = runs.front().results.empty() || runs.front().results.front().bound > 0;
  std::cout << "\nthread scaling (tokens/s over " << runs.front().f.threads << " thread(s)"
            << (bounds ? "; [bound: the same ratio of the bounds measured beside them]" : "") << "):\n";
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  for (std::size_t t = 0; t < runs.front().results.size(); ++t) {
    const TestResult& base = runs.front().results[t];
    std::string line = "  " + base.test + ":";
    for (std::size_t r = 1; r < runs.size(); ++r) {
      const TestResult& x = runs[r].results[t];
      line += fmt::format(" {} threads {:.2f}x", runs[r].f.threads, ratio(x.avg, base.avg));
      if (x.bound > 0 && base.bound > 0) line += fmt::format(" [bound {:.2f}x]", ratio(x.bound, base.bound));
    }
    std::cout << line << "\n";
  }
}

int run_bench(const BArgs& args) {
  const Plan p = plan_bench(args);
  if (args.roofline_only) {
    BArgs a = args;
    a.threads = args.thread_list.front();
    const Roofline roof = measure_roofline(a.threads);
    return print_roofline(a, p, roof, compute_peak(roof, p.dtype, p.quant));
  }
  std::vector<BenchRun> runs;
  for (int t : args.thread_list) {
    BArgs a = args;
    a.threads = t;
    runs.push_back(measure_run(a, p));
  }
  nlohmann::json all = nlohmann::json::array();
  if (args.output == "csv")
    std::cout << "model,backend,isa,threads,dtype,test,n_prompt,n_gen,avg_ts,stddev_ts,roofline_fraction\n";
  for (const BenchRun& r : runs) {
    if (args.output == "json")
      for (auto& row : json_rows(args, p, r.roof, r.f, r.results)) all.push_back(std::move(row));
    else if (args.output == "csv")
      print_csv(args, p, r.f, r.results);
    else
      print_markdown(args, p, r.roof, r.f, r.results);
    if (args.output == "md" && !p.llama.empty()) print_compare(args, p, r.f, r.results);
  }
  if (args.output == "json") std::cout << all.dump(1) << "\n";
  if (args.output == "md") print_thread_scaling(runs);
  return kExitOk;
}

Registrar reg_bench({"bench", "llama-bench style throughput (ppN, tgN) with roofline fractions",
                     [](CLI::App& sub) -> std::function<int()> {
                       auto a = std::make_shared<BArgs>();
                       add_model_arg(sub, &a->model);
                       sub.add_option("-p,--n-prompt", a->prompts,
                                      "Prompt lengths, comma separated (default 512; 0 = no prefill test)")
                           ->type_name("N[,N...]")
                           ->check(comma_list(whole_in(0, kMaxPrompt), Repeats::Refuse));
                       sub.add_option("-n,--n-gen", a->n_gen, "Generated tokens (default 128; 0 = none)");
                       sub.add_option("-r,--repetitions", a->reps, "Repetitions per test (default 3)");
                       auto threads_text = std::make_shared<std::string>("0");
                       sub.add_option("-t,--threads", *threads_text,
                                      "Threads, comma separated: one run per count (0 = all cores; default 0)")
                           ->type_name("N[,N...]")
                           ->check(comma_list(thread_count(), Repeats::Refuse));
                       sub.add_option("--dtype", a->dtype, "bf16|fp16|fp32, or q8_0|q4_0 weight-only quantization "
                                                           "(default: checkpoint dtype)");
                       sub.add_option("--quantize-lm-head", a->quantize_lm_head,
                                      "q8_0 | q4_0: quantize lm_head too (needs a quantized --dtype)");
                       sub.add_option("-o,--output", a->output, "md|json|csv");
                       sub.add_option("--backend", a->backend, "cpu|reference");
                       sub.add_option("--registry", a->registry, "Writable kernel registry dir (looked up first)");
                       sub.add_option("--kernel-cache", a->kernel_cache, "Packed-weight cache dir");
                       sub.add_flag("--roofline", a->roofline_only, "Only measure the roofline and print the model's bounds");
                       sub.add_flag("--no-roofline", a->no_roofline, "Skip the roofline measurement");
                       sub.add_option("--compare", a->compare,
                                      "llama-bench -o json (or jsonl) results of the same shapes: print llama.cpp's "
                                      "tokens/s and the ratio beside each test");
                       return [a, threads_text] {
                         a->thread_list.clear();
                         // 0 is all cores: `-t 2,0` on two cores measured 2 threads twice and
                         // printed a scaling between them.
                         const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
                         for (const auto& t : split_commas(*threads_text)) {
                           const int n = std::stoi(t);
                           const int resolved = n > 0 ? n : cores;
                           for (int prev : a->thread_list)
                             if ((prev > 0 ? prev : cores) == resolved)
                               throw UsageError("--threads: '" + *threads_text + "' gives " + std::to_string(resolved) +
                                                " threads twice (0 = all " + std::to_string(cores) +
                                                " cores); give each count once");
                           a->thread_list.push_back(n);
                         }
                         return run_bench(*a);
                       };
                     }});

}  // namespace
}  // namespace llmport::cli
