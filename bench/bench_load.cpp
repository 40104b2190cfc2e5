// WeightStore::open time on a generated bf16 model directory (mmap + header validation +
// tensor-set check; no tensor data is read). Shows a 2 GB-class model opens well under a
// second before first use.
//
// The model is written once at setup into $TMPDIR (removed at exit). Its size is chosen by
// LLMPORT_BENCH_LOAD_GB (default 0.25 so a casual run does not fill a disk; set 2 for the
// 2 GB-class measurement). Run: LLMPORT_BENCH_LOAD_GB=2 ./bench_load
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "llmport/model_config.hpp"
#include "llmport/safetensors_writer.hpp"
#include "llmport/weights.hpp"

namespace {

namespace fs = std::filesystem;
using namespace llmport;

struct GeneratedModel {
  fs::path dir;
  ModelConfig cfg;
  std::size_t bytes = 0;
  ~GeneratedModel() {
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};

/// A Llama-shaped bf16 model of about `gb` GB: emb_dim 2048, 16/8 heads, hidden 5632,
/// vocab 32000, n_layers chosen to reach the size, sharded one file per 8 layers.
GeneratedModel& model() {
  static GeneratedModel m = [] {
    GeneratedModel g;
    const char* env = std::getenv("LLMPORT_BENCH_LOAD_GB");
    const double gb = env ? std::atof(env) : 0.25;
    nlohmann::json c = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", 2048},
                        {"num_attention_heads", 16}, {"num_key_value_heads", 8}, {"intermediate_size", 5632},
                        {"vocab_size", 32000}, {"max_position_embeddings", 2048}, {"torch_dtype", "bfloat16"},
                        {"tie_word_embeddings", true}, {"num_hidden_layers", 1}};
    const double emb_bytes = 32000.0 * 2048 * 2;
    const double layer_bytes = 2.0 * (2048.0 * 2048 * 2 + 2048.0 * 1024 * 2 + 3.0 * 5632 * 2048);
    const int n_layers = std::max(1, static_cast<int>((gb * 1e9 - emb_bytes) / layer_bytes));
    c["num_hidden_layers"] = n_layers;
    g.dir = fs::temp_directory_path() / ("llmport_bench_load_" + std::to_string(::getpid()));
    fs::create_directories(g.dir);
    std::ofstream(g.dir / "config.json") << c.dump(1);
    g.cfg = resolve_model_config(c);
    g.cfg.dir = g.dir;
    // Tensors grouped into shards of 8 layers; constant non-zero contents are enough since
    // open() never reads tensor data.
    nlohmann::json weight_map = nlohmann::json::object();
    std::vector<TensorData> shard;
    std::size_t shard_bytes = 0;
    int shard_id = 0;
    auto flush = [&] {
      const std::string name = "model-" + std::to_string(shard_id++) + ".safetensors";
      for (const auto& t : shard) weight_map[t.name] = name;
      write_safetensors(g.dir / name, shard);
      shard.clear();
      shard_bytes = 0;
    };
    for (const TensorSpec& s : expected_tensors(g.cfg)) {
      TensorData t{s.name, DType::BF16, s.shape, {}};
      int64_t n = 1;
      for (auto d : s.shape) n *= d;
      t.bytes.assign(static_cast<std::size_t>(n) * 2, 0x3f);
      g.bytes += t.bytes.size();
      shard_bytes += t.bytes.size();
      shard.push_back(std::move(t));
      if (shard_bytes > 8 * layer_bytes) flush();
    }
    if (!shard.empty()) flush();
    std::ofstream(g.dir / "model.safetensors.index.json")
        << nlohmann::json{{"metadata", {{"total_size", g.bytes}}}, {"weight_map", weight_map}}.dump();
    return g;
  }();
  return m;
}

void BM_WeightStoreOpen(benchmark::State& state) {
  GeneratedModel& m = model();
  for (auto _ : state) {
    WeightStore ws = WeightStore::open(m.dir, m.cfg);
    benchmark::DoNotOptimize(ws.total_bytes());
  }
  state.counters["model_GB"] = static_cast<double>(m.bytes) / 1e9;
  state.counters["n_layers"] = m.cfg.n_layers;
  state.counters["n_files"] = static_cast<double>(WeightStore::open(m.dir, m.cfg).files().size());
}
BENCHMARK(BM_WeightStoreOpen)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// Cost of the config step (config.json + gate + resolution) for comparison.
void BM_LoadModelConfig(benchmark::State& state) {
  GeneratedModel& m = model();
  for (auto _ : state) benchmark::DoNotOptimize(load_model_config(m.dir).n_layers);
}
BENCHMARK(BM_LoadModelConfig)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
