// Tokenizer benchmarks: encode throughput (MB/s, one thread) on ~1 MB of deterministic
// English + code text for the qwen3 and llama3 tokenizers (target >= 10 MB/s), and
// tokenizer.json load time of every tokenizer under $LLMPORT_SHARED/tokenizers.
//   LLMPORT_SHARED=../shared ./bench_tokenizer
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "llmport/tokenizer.hpp"

namespace {

namespace fs = std::filesystem;

fs::path shared_root() {
  const char* env = std::getenv("LLMPORT_SHARED");
  return (env && *env) ? fs::path(env) : fs::path("../shared");
}

/// ~`bytes` of text: English sentences (from a fixed word list, LCG-chosen) interleaved
/// with code blocks, numbers, punctuation and a little non-ASCII, always the same.
std::string make_corpus(std::size_t bytes) {
  static const char* words[] = {
      "the", "model", "of", "and", "a", "to", "in", "is", "that", "for", "it", "with", "as", "was", "on",
      "tokenizer", "performance", "deployment", "reference", "kernel", "matrix", "attention", "cache",
      "inference", "throughput", "language", "between", "however", "because", "although", "results",
      "quickly", "Hello", "World", "London", "Monday", "they're", "we've", "don't", "it's", "café",
      "naïve", "über", "1024", "3.14159", "2026", "x86-64", "GPU", "CPU", "e-mail", "state-of-the-art"};
  static const char* code[] = {
      "def forward(self, x):\n    h = self.norm(x)\n    return x + self.attn(h)\n",
      "for (int il = 0; il < n_layers; ++il) {\n  rmsnorm(x, w[il], eps);\n}\n",
      "    if (ids.size() > max_tokens) throw UsageError(\"prompt too long\");\n",
      "#include <vector>\nstd::vector<float> logits(n_vocab, 0.0f);  // [n_vocab]\n",
      "SELECT id, name FROM users WHERE created_at >= '2024-01-01' ORDER BY id;\n",
      "{\"role\": \"user\", \"content\": \"What is 3333+777?\"}\n",
      "\tconst auto t0 = std::chrono::steady_clock::now();\n"};
  std::uint64_t s = 0x9E3779B97F4A7C15ULL;
  auto next = [&](std::uint64_t n) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (s >> 33) % n;
  };
  std::string out;
  out.reserve(bytes + 256);
  while (out.size() < bytes) {
    if (next(5) == 0) {
      out += code[next(sizeof code / sizeof *code)];
      continue;
    }
    std::size_t n = 6 + next(14);
    for (std::size_t i = 0; i < n; ++i) {
      out += words[next(sizeof words / sizeof *words)];
      out += i + 1 == n ? (next(4) == 0 ? "?" : ".") : (next(8) == 0 ? ", " : " ");
    }
    out += next(3) == 0 ? "\n\n" : " ";
  }
  return out;
}

void encode_bench(benchmark::State& st, const fs::path& dir) {
  auto tok = llmport::Tokenizer::load(dir);
  const std::string text = make_corpus(1 << 20);
  std::size_t n_tokens = 0;
  for (auto _ : st) {
    auto ids = tok->encode(text, {false, false});
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * text.size()));
  st.counters["MB/s"] = benchmark::Counter(static_cast<double>(st.iterations() * text.size()) / 1e6,
                                           benchmark::Counter::kIsRate);
  st.counters["tokens"] = static_cast<double>(n_tokens);
}

void load_bench(benchmark::State& st, const fs::path& dir) {
  for (auto _ : st) {
    auto tok = llmport::Tokenizer::load(dir);
    benchmark::DoNotOptimize(tok.get());
  }
  st.counters["MB"] = static_cast<double>(fs::file_size(dir / "tokenizer.json")) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path root = shared_root() / "tokenizers";
  if (!fs::is_directory(root)) {
    std::cerr << "error: " << root << " not found (set LLMPORT_SHARED)\n";
    return 2;
  }
  for (const char* name : {"qwen3", "llama3"}) {
    if (fs::exists(root / name / "tokenizer.json"))
      benchmark::RegisterBenchmark((std::string("Encode1MB/") + name).c_str(), encode_bench, root / name)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(1.0);
    else
      std::cerr << "warning: " << (root / name) << " has no tokenizer.json\n";
  }
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "tokenizer.json")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs)
    benchmark::RegisterBenchmark(("Load/" + d.filename().string()).c_str(), load_bench, d)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
