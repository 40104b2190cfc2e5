// Synthetic models at real or tiny shapes, deterministic by seed (see synth.hpp).
#include "llmport/synth.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "llmport/architecture.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/model_config.hpp"
#include "llmport/safetensors_writer.hpp"
#include "llmport/synth_tokenizer.hpp"

namespace llmport {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json llama_like(const std::string& arch, const std::string& type, int hidden, int inter, int layers,
                int heads, int kv, int vocab, int max_pos, double theta, double eps, bool tie,
                int bos, int eos, const std::string& dtype) {
  return json{{"architectures", {arch}},
              {"model_type", type},
              {"hidden_size", hidden},
              {"intermediate_size", inter},
              {"num_hidden_layers", layers},
              {"num_attention_heads", heads},
              {"num_key_value_heads", kv},
              {"vocab_size", vocab},
              {"max_position_embeddings", max_pos},
              {"hidden_act", "silu"},
              {"rms_norm_eps", eps},
              {"rope_theta", theta},
              {"tie_word_embeddings", tie},
              {"bos_token_id", bos},
              {"eos_token_id", eos},
              {"attention_dropout", 0.0},
              {"initializer_range", 0.02},
              {"use_cache", true},
              {"torch_dtype", dtype}};
}

std::vector<SynthPreset> build_presets() {
  std::vector<SynthPreset> p;
  // Real shapes (values as in the published config.json of each model).
  {
    json c = llama_like("LlamaForCausalLM", "llama", 2048, 5632, 22, 32, 4, 32000, 2048, 10000.0,
                        1e-5, false, 1, 2, "bfloat16");
    c["attention_bias"] = false;
    c["mlp_bias"] = false;
    p.push_back({"tinyllama-1.1b", "TinyLlama-1.1B shape (Llama, GQA 32/4)", c, 1.0, 10.0, false});
  }
  {
    json c = llama_like("LlamaForCausalLM", "llama", 2048, 8192, 16, 32, 8, 128256, 131072, 500000.0,
                        1e-5, true, 128000, 128001, "bfloat16");
    c["head_dim"] = 64;
    c["attention_bias"] = false;
    c["mlp_bias"] = false;
    c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
    p.push_back({"llama-3.2-1b", "Llama-3.2-1B shape (llama3 RoPE scaling, tied)", c, 1.0, 10.0, false});
  }
  {
    json c = llama_like("Qwen2ForCausalLM", "qwen2", 896, 4864, 24, 14, 2, 151936, 32768, 1000000.0,
                        1e-6, true, 151643, 151643, "bfloat16");
    c["use_sliding_window"] = false;
    c["sliding_window"] = 32768;
    c["max_window_layers"] = 24;
    p.push_back({"qwen2.5-0.5b", "Qwen2.5-0.5B shape (QKV bias, tied)", c, 1.0, 10.0, false});
  }
  {
    json c = llama_like("Qwen3ForCausalLM", "qwen3", 1024, 3072, 28, 16, 8, 151936, 40960, 1000000.0,
                        1e-6, true, 151643, 151645, "bfloat16");
    c["head_dim"] = 128;
    c["attention_bias"] = false;
    c["use_sliding_window"] = false;
    c["sliding_window"] = nullptr;
    c["max_window_layers"] = 28;
    p.push_back({"qwen3-0.6b", "Qwen3-0.6B shape (q/k norm, head_dim 128 != 1024/16, tied)", c, 1.0,
                 10.0, false});
  }
  {
    json c = llama_like("MistralForCausalLM", "mistral", 4096, 14336, 32, 32, 8, 32768, 32768,
                        1000000.0, 1e-5, false, 1, 2, "bfloat16");
    c["sliding_window"] = nullptr;
    p.push_back({"mistral-7b", "Mistral-7B-v0.3 shape (no sliding window; 14 GB in bf16)", c, 1.0,
                 10.0, false});
  }
  // Tiny shapes for tests (the same family deltas as models/synthetic in the shared data).
  {
    json c = llama_like("LlamaForCausalLM", "llama", 128, 344, 3, 8, 2, 1024, 256, 500000.0, 1e-5,
                        true, 1000, 1001, "bfloat16");
    c["head_dim"] = 16;
    c["attention_bias"] = false;
    c["mlp_bias"] = false;
    c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
    p.push_back({"tiny-llama", "tiny Llama-3 (llama3 RoPE scaling, GQA 8/2, tied)", c, 5.0, 10.0, true});
  }
  {
    json c = llama_like("Qwen2ForCausalLM", "qwen2", 96, 256, 2, 6, 2, 1024, 256, 1000000.0, 1e-6,
                        false, 1000, 1000, "bfloat16");
    c["use_sliding_window"] = false;
    c["sliding_window"] = 4096;
    c["max_window_layers"] = 2;
    p.push_back({"tiny-qwen2", "tiny Qwen2 (QKV bias, untied)", c, 1.0, 10.0, true});
  }
  {
    json c = llama_like("Qwen3ForCausalLM", "qwen3", 64, 192, 2, 4, 2, 1024, 256, 1000000.0, 1e-6,
                        true, 1000, 1002, "bfloat16");
    c["head_dim"] = 32;
    c["attention_bias"] = false;
    c["use_sliding_window"] = false;
    c["sliding_window"] = nullptr;
    p.push_back({"tiny-qwen3", "tiny Qwen3 (q/k norm, head_dim 32 != 64/4, tied)", c, 6.0, 10.0, true});
  }
  {
    json c = llama_like("MistralForCausalLM", "mistral", 128, 256, 2, 4, 4, 1024, 256, 1000000.0,
                        1e-5, false, 1, 2, "float32");
    c["sliding_window"] = nullptr;
    p.push_back({"tiny-mistral", "tiny Mistral (MHA, fp32, untied)", c, 1.0, 10.0, true});
  }
  return p;
}

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// How one tensor's values are drawn: mean + std * N(0, 1).
struct TensorPlan {
  TensorData meta;  // name, dtype, shape (bytes unused)
  double mean = 0.0;
  double std = 1.0;
  uint64_t numel() const {
    uint64_t n = 1;
    for (auto d : meta.shape) n *= static_cast<uint64_t>(d);
    return n;
  }
};

constexpr uint64_t kChunk = 1u << 16;  // values per independent random stream

// Fills out[0..n) with N(0,1) from the stream of (tensor_seed, chunk) by Box-Muller. Each
// chunk has its own stream, so the result does not depend on how chunks map to threads.
void normal_chunk(uint64_t tensor_seed, uint64_t chunk, float* out, uint64_t n) {
  uint64_t s = tensor_seed ^ (chunk * 0xd1342543de82ef95ull);
  splitmix64(s);
  for (uint64_t i = 0; i < n; i += 2) {
    // u1 in (0, 1], u2 in [0, 1): 53-bit uniforms.
    const double u1 = (static_cast<double>(splitmix64(s) >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = static_cast<double>(splitmix64(s) >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 2.0 * 3.14159265358979323846 * u2;
    out[i] = static_cast<float>(r * std::cos(a));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(a));
  }
}

void write_tensor(const TensorPlan& t, uint64_t seed, std::ostream& os) {
  const uint64_t n = t.numel();
  const uint64_t tensor_seed = seed * 0x9e3779b97f4a7c15ull ^ fnv1a(t.meta.name);
  const uint64_t n_chunks = (n + kChunk - 1) / kChunk;
  const unsigned n_threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  const uint64_t batch = 64;  // chunks generated per round (4M values)
  const std::size_t es = dtype_size(t.meta.dtype);
  std::vector<float> vals(static_cast<std::size_t>(std::min(n, batch * kChunk)));  // [batch values]
  std::vector<unsigned char> bytes(vals.size() * es);
  for (uint64_t c0 = 0; c0 < n_chunks; c0 += batch) {
    const uint64_t c1 = std::min(n_chunks, c0 + batch);
    const uint64_t v0 = c0 * kChunk, v1 = std::min(n, c1 * kChunk);
    auto work = [&](unsigned tid) {
      for (uint64_t c = c0 + tid; c < c1; c += n_threads) {
        const uint64_t b = c * kChunk, e = std::min(n, b + kChunk);
        float* dst = vals.data() + (b - v0);
        normal_chunk(tensor_seed, c, dst, e - b);
        for (uint64_t i = 0; i < e - b; ++i)
          dst[i] = static_cast<float>(t.mean + t.std * dst[i]);
        unsigned char* out = bytes.data() + (b - v0) * es;
        if (t.meta.dtype == DType::F32) {
          std::memcpy(out, dst, (e - b) * 4);
        } else {
          for (uint64_t i = 0; i < e - b; ++i) {
            const uint16_t hv = t.meta.dtype == DType::BF16 ? f32_to_bf16(dst[i]) : f32_to_f16(dst[i]);
            std::memcpy(out + i * 2, &hv, 2);
          }
        }
      }
    };
    if (c1 - c0 > 1 && n_threads > 1) {
      std::vector<std::thread> pool;
      for (unsigned tid = 0; tid < n_threads; ++tid) pool.emplace_back(work, tid);
      for (auto& th : pool) th.join();
    } else {
      for (unsigned tid = 0; tid < n_threads; ++tid) work(tid);
    }
    os.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>((v1 - v0) * es));
  }
}

/// Initial values of one tensor: mean and std of its normal distribution (see synth.hpp).
/// Linear weights [n_out, n_in] scale by 1/sqrt(fan_in = n_in); `per_dim` = logit_std /
/// sqrt(emb_dim) is the scale that spreads the logits.
std::pair<double, double> init_of(const TensorSpec& t, bool tied, double out_scale, double per_dim) {
  const auto fan_in = [&] { return std::sqrt(static_cast<double>(t.shape.at(1))); };
  switch (t.role) {
    case TensorRole::Embed: return {0.0, 1.0};
    case TensorRole::Wq: case TensorRole::Wk: case TensorRole::Wv: case TensorRole::WGate: case TensorRole::WUp:
      return {0.0, 1.0 / fan_in()};
    case TensorRole::Wo: case TensorRole::WDown: return {0.0, out_scale / fan_in()};
    case TensorRole::Bq: case TensorRole::Bk: case TensorRole::Bv: case TensorRole::Bo: return {0.0, 0.5};
    case TensorRole::LmHead: return {0.0, per_dim};
    // The final norm output has RMS ~1, so h . W^T has std |h| * std(W) = sqrt(emb) * std(W):
    // a tied model (no lm_head to scale) scales its final norm instead.
    case TensorRole::FinalNorm: return tied ? std::pair{per_dim, 0.1 * per_dim} : std::pair{1.0, 0.1};
    case TensorRole::AttnNorm: case TensorRole::QNorm: case TensorRole::KNorm: case TensorRole::FfnNorm:
      return {1.0, 0.1};
  }
  return {0.0, 1.0};
}

/// The table's tensor set in the order synth has always written it (o_proj after the
/// attention's optional tensors), so a seed keeps giving byte-identical files.
std::vector<TensorSpec> synth_order(std::vector<TensorSpec> specs) {
  std::vector<TensorSpec> out;
  std::optional<TensorSpec> wo;
  for (auto& s : specs) {
    if (s.role == TensorRole::Wo) {
      wo = std::move(s);
      continue;
    }
    if (s.role == TensorRole::FfnNorm && wo) {
      out.push_back(std::move(*wo));
      wo.reset();
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<TensorPlan> plan_tensors(const ModelConfig& cfg, DType dtype, double out_scale, double logit_std) {
  const double per_dim = logit_std / std::sqrt(static_cast<double>(cfg.emb_dim));
  std::vector<TensorPlan> t;
  for (auto& spec : synth_order(expected_tensors(cfg))) {
    const auto [mean, sd] = init_of(spec, cfg.tie_word_embeddings, out_scale, per_dim);
    t.push_back({TensorData{std::move(spec.name), dtype, std::move(spec.shape), {}}, mean, sd});
  }
  return t;
}

// --out was checked (absent, empty or --force) before: the files are ours to replace,
// each through a temporary name + rename.
void write_json(const fs::path& p, const json& j) { write_output_file(p, j.dump(2) + "\n", Overwrite::Always); }

// The generated tokenizer of a written config: its special tokens are the config's BOS/EOS.
SynthTokenizer config_tokenizer(const json& cfg) {
  std::optional<int> bos;
  if (cfg["bos_token_id"].is_number_integer()) bos = cfg["bos_token_id"].get<int>();
  std::vector<int> eos;
  if (cfg["eos_token_id"].is_number_integer()) eos.push_back(cfg["eos_token_id"].get<int>());
  if (cfg["eos_token_id"].is_array())
    for (const auto& e : cfg["eos_token_id"]) eos.push_back(e.get<int>());
  return ascii_bpe_tokenizer(cfg["vocab_size"].get<int>(), bos, eos, cfg["max_position_embeddings"].get<int>());
}

}  // namespace

const std::vector<SynthPreset>& synth_presets() {
  static const std::vector<SynthPreset> p = build_presets();
  return p;
}

const SynthPreset& synth_preset(const std::string& name) {
  std::string names;
  for (const auto& p : synth_presets()) {
    if (p.name == name) return p;
    if (!names.empty()) names += ", ";
    names += p.name;
  }
  throw UsageError("unknown synth preset '" + name + "' (available: " + names + ")");
}

SynthResult write_synthetic_model(const SynthOptions& opt) {
  return write_synthetic_model(opt, synth_preset(opt.preset));
}

SynthResult write_synthetic_model(const SynthOptions& opt, const SynthPreset& preset) {
  if (opt.out.empty()) throw UsageError("synth: --out DIR is required");
  if (fs::exists(opt.out)) {
    if (!fs::is_directory(opt.out)) throw UsageError(opt.out.string() + ": exists and is not a directory");
    if (!fs::is_empty(opt.out) && !opt.force)
      throw UsageError(opt.out.string() + ": directory is not empty (use --force to write into it)");
  }
  json cfg = preset.config;
  const DType dtype = opt.dtype ? *opt.dtype : parse_dtype(cfg["torch_dtype"].get<std::string>());
  cfg["torch_dtype"] = dtype == DType::F32 ? "float32" : dtype == DType::BF16 ? "bfloat16" : "float16";
  if (opt.vocab_size) {
    if (*opt.vocab_size < 1) throw UsageError("synth: vocab size must be >= 1");
    cfg["vocab_size"] = *opt.vocab_size;
  }
  const int vocab = cfg["vocab_size"];
  if (opt.bos_token_id) cfg["bos_token_id"] = *opt.bos_token_id;
  if (!opt.eos_token_ids.empty())
    cfg["eos_token_id"] = opt.eos_token_ids.size() == 1 ? json(opt.eos_token_ids[0]) : json(opt.eos_token_ids);
  // Special ids outside a (smaller) tokenizer vocabulary are dropped rather than left dangling.
  auto in_vocab = [&](const json& v) { return v.is_number_integer() && v.get<int>() >= 0 && v.get<int>() < vocab; };
  if (!in_vocab(cfg["bos_token_id"])) cfg["bos_token_id"] = nullptr;
  if (cfg["eos_token_id"].is_array()) {
    json keep = json::array();
    for (const auto& e : cfg["eos_token_id"])
      if (in_vocab(e)) keep.push_back(e);
    cfg["eos_token_id"] = keep.empty() ? json(nullptr) : keep;
  } else if (!in_vocab(cfg["eos_token_id"])) {
    cfg["eos_token_id"] = nullptr;
  }
  cfg["llmport_synth"] = {{"preset", preset.name}, {"seed", opt.seed}};
  // The tensor set is the architecture table's for the config as llmport resolves it;
  // resolved before anything is written, so a config that does not resolve leaves no files.
  const ModelConfig resolved = resolve_model_config(cfg);
  if (opt.ascii_tokenizer && !opt.tokenizer_dir.empty())
    throw UsageError("synth: --ascii-tokenizer and --tokenizer DIR exclude each other");
  const std::optional<SynthTokenizer> tok =
      opt.ascii_tokenizer ? std::optional(config_tokenizer(cfg)) : std::nullopt;

  fs::create_directories(opt.out);
  write_json(opt.out / "config.json", cfg);
  json gen = {{"bos_token_id", cfg["bos_token_id"]}, {"eos_token_id", cfg["eos_token_id"]},
              {"do_sample", false}};
  write_json(opt.out / "generation_config.json", gen);
  std::set<std::string> written;  // tokenizer files of the new model
  if (!opt.tokenizer_dir.empty()) {
    if (!fs::is_regular_file(opt.tokenizer_dir / "tokenizer.json"))
      throw UsageError(opt.tokenizer_dir.string() + ": no tokenizer.json to copy");
    for (const char* f : kSynthTokenizerFiles)
      if (fs::is_regular_file(opt.tokenizer_dir / f)) {  // never a FIFO (a blocking read)
        fs::copy_file(opt.tokenizer_dir / f, opt.out / f, fs::copy_options::overwrite_existing);
        // A read-only source (a snapshot, shared data) would make the copy read-only too,
        // and the next --force could not replace it.
        fs::permissions(opt.out / f, fs::perms::owner_write, fs::perm_options::add);
        written.insert(f);
      }
  }
  if (tok) {
    // Compact: the real-shape vocabularies (150k ids) would be tens of MB indented.
    write_output_file(opt.out / "tokenizer.json", tok->tokenizer.dump() + "\n", Overwrite::Always);
    write_json(opt.out / "tokenizer_config.json", tok->tokenizer_config);
    written.insert({"tokenizer.json", "tokenizer_config.json"});
  }

  const auto plan = plan_tensors(resolved, dtype, preset.out_scale, preset.logit_std);
  std::vector<TensorData> metas;
  SynthResult r;
  for (const auto& t : plan) {
    metas.push_back(t.meta);
    r.n_params += t.numel();
  }
  write_safetensors_streamed(
      opt.out / "model.safetensors", metas,
      [&](std::size_t i, std::ostream& os) { write_tensor(plan[i], opt.seed, os); },
      {{"format", "pt"}, {"llmport_synth_preset", preset.name}, {"llmport_synth_seed", std::to_string(opt.seed)}});
  // The replaced model's tokenizer files would be read with this one (a tokenizer larger
  // than the vocabulary, another chat template); removed once the new model is complete.
  for (const char* f : kSynthTokenizerFiles) {
    const auto st = fs::symlink_status(opt.out / f);  // a link goes, never its target
    if (!written.count(f) && (fs::is_regular_file(st) || fs::is_symlink(st)) && fs::remove(opt.out / f))
      r.removed.push_back(opt.out / f);
  }
  r.dir = opt.out;
  r.bytes = fs::file_size(opt.out / "model.safetensors");
  r.config = cfg;
  return r;
}

}  // namespace llmport
