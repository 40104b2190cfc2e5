// Fuzz target: safetensors header + model.safetensors.index.json (src/model). An input
// starting with '{' is an index: it is opened by WeightStore beside one small valid shard
// (model-00001-of-00001.safetensors) for a fixed tiny Llama config. Any other input is a
// safetensors file opened by SafetensorsFile; every tensor it accepts has its first and
// last byte read, so a byte range outside the mapping is an ASan report, not a pass.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_util.hpp"
#include "llmport/model_config.hpp"
#include "llmport/weights.hpp"

namespace {

volatile unsigned char g_sink;

void touch(const llmport::TensorView& v) {
  if (v.nbytes == 0) return;
  const auto* p = static_cast<const unsigned char*>(v.data);
  g_sink = static_cast<unsigned char>(p[0] ^ p[v.nbytes - 1]);
}

/// One F32 tensor `name` of 2 elements, as a safetensors file.
std::string tiny_safetensors(const std::string& name) {
  std::string header = R"({")" + name + R"(":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string out(8, '\0');
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + std::string(8, '\0');
}

const llmport::ModelConfig& tiny_config() {
  static const llmport::ModelConfig cfg = llmport::resolve_model_config(nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8,
    "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 1, "vocab_size": 4, "max_position_embeddings": 16,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true})"));
  return cfg;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto bytes = llmport::fuzz::as_text(data, size);
  try {
    if (!bytes.empty() && bytes[0] == '{') {
      llmport::fuzz::drop_file("model.safetensors");
      llmport::fuzz::put_file("model-00001-of-00001.safetensors", tiny_safetensors("model.norm.weight"));
      llmport::fuzz::put_file("model.safetensors.index.json", bytes);
      auto ws = llmport::WeightStore::open(llmport::fuzz::work_dir(), tiny_config());
      (void)ws.total_bytes();
    } else {
      auto p = llmport::fuzz::put_file("model.safetensors", bytes);
      llmport::SafetensorsFile f(p);
      for (const auto& [name, v] : f.tensors()) touch(v);
    }
  } catch (const std::exception&) {
  }
  return 0;
}
