// The architecture rows (see architecture.hpp). Deltas as transformers' modeling_llama.py,
// modeling_mistral.py, modeling_qwen2.py and modeling_qwen3.py build their attention, and
// defaults as their configuration_*.py state them.
#include "llmport/architecture.hpp"

#include <algorithm>

namespace llmport {

namespace {

// RoPE scaling types resolve_model_config parses and rope_inv_freq implements.
constexpr std::array<std::string_view, 3> kRopeTypes = {"none", "linear", "llama3"};

constexpr std::array<Architecture, 4> kArchitectures = {{
    {.hf_class = "LlamaForCausalLM",
     .model_type = "llama",
     .family = "Llama",
     .scope_note = "",
     .qkv_bias = BiasRule::AttentionBias,
     .o_bias = BiasRule::AttentionBias,
     .qk_norm = false,
     .tie_word_embeddings_default = false,
     .rope_types = kRopeTypes,
     .default_sliding_window = std::nullopt,
     .use_sliding_window_default = std::nullopt,
     .reads_mlp_bias = true,
     .default_max_position_embeddings = 2048,
     .default_rope_theta = 10000.0,
     .hidden_act = "silu"},
    // MistralAttention has no bias at all; MistralConfig defaults sliding_window to 4096.
    {.hf_class = "MistralForCausalLM",
     .model_type = "mistral",
     .family = "Mistral",
     .scope_note = "without an effective sliding window",
     .qkv_bias = BiasRule::Never,
     .o_bias = BiasRule::Never,
     .qk_norm = false,
     .tie_word_embeddings_default = false,
     .rope_types = kRopeTypes,
     .default_sliding_window = 4096,
     .use_sliding_window_default = std::nullopt,
     .reads_mlp_bias = false,
     .default_max_position_embeddings = 4096 * 32,
     .default_rope_theta = 10000.0,
     .hidden_act = "silu"},
    // Qwen2Attention: q/k/v bias=True, o_proj bias=False, whatever attention_bias says (TRAPS #5).
    {.hf_class = "Qwen2ForCausalLM",
     .model_type = "qwen2",
     .family = "Qwen2",
     .scope_note = "QKV bias",
     .qkv_bias = BiasRule::Always,
     .o_bias = BiasRule::Never,
     .qk_norm = false,
     .tie_word_embeddings_default = false,
     .rope_types = kRopeTypes,
     .default_sliding_window = std::nullopt,
     .use_sliding_window_default = false,
     .reads_mlp_bias = false,
     .default_max_position_embeddings = 32768,
     .default_rope_theta = 10000.0,
     .hidden_act = "silu"},
    {.hf_class = "Qwen3ForCausalLM",
     .model_type = "qwen3",
     .family = "Qwen3",
     .scope_note = "q/k norm",
     .qkv_bias = BiasRule::AttentionBias,
     .o_bias = BiasRule::AttentionBias,
     .qk_norm = true,
     .tie_word_embeddings_default = false,
     .rope_types = kRopeTypes,
     .default_sliding_window = std::nullopt,
     .use_sliding_window_default = false,
     .reads_mlp_bias = false,
     .default_max_position_embeddings = 32768,
     .default_rope_theta = 10000.0,
     .hidden_act = "silu"},
}};

std::string join(std::span<const std::string_view> items, std::string_view sep) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) (s += i ? sep : "") += items[i];
  return s;
}

std::string_view bias_words(BiasRule r) {
  switch (r) {
    case BiasRule::Never: return "never";
    case BiasRule::Always: return "always";
    case BiasRule::AttentionBias: return "attention_bias";
  }
  return "?";
}

}  // namespace

std::span<const Architecture> architectures() noexcept { return kArchitectures; }

const Architecture* find_architecture(std::string_view hf_class) noexcept {
  for (const auto& a : kArchitectures)
    if (a.hf_class == hf_class) return &a;
  return nullptr;
}

const Architecture* architecture_for_model_type(std::string_view model_type) noexcept {
  for (const auto& a : kArchitectures)
    if (a.model_type == model_type) return &a;
  return nullptr;
}

std::string accepted_architecture_list() {
  std::vector<std::string_view> names;
  for (const auto& a : kArchitectures) names.push_back(a.hf_class);
  return join(names, ", ");
}

bool rope_type_allowed(const Architecture& arch, std::string_view rope_type) noexcept {
  return std::find(arch.rope_types.begin(), arch.rope_types.end(), rope_type) != arch.rope_types.end();
}

std::string rope_type_list(const Architecture& arch) { return join(arch.rope_types, ", "); }

AttentionDeltas attention_deltas(const Architecture& arch, bool attention_bias) noexcept {
  return {bias_present(arch.qkv_bias, attention_bias), bias_present(arch.o_bias, attention_bias), arch.qk_norm};
}

std::optional<std::string> head_dim_problem(long long head_dim) {
  if (head_dim <= 0) return "head_dim " + std::to_string(head_dim) + " must be > 0";
  if (head_dim % 2 != 0)
    return "head_dim " + std::to_string(head_dim) + " is odd: RoPE rotates pairs of dimensions";
  return std::nullopt;
}

std::string supported_families_sentence() {
  std::string s;
  for (std::size_t i = 0; i < kArchitectures.size(); ++i) {
    const auto& a = kArchitectures[i];
    s += (i ? ", " : "") + std::string(a.family);
    if (!a.scope_note.empty()) s += " (" + std::string(a.scope_note) + ")";
  }
  return s;
}

std::string support_table_markdown() {
  std::string t =
      "| architectures[0] | model_type | q/k/v bias | o_proj bias | q/k norm | tied embeddings by default | "
      "RoPE scaling | sliding window when absent | use_sliding_window when absent | mlp_bias | "
      "max_position_embeddings when absent | hidden_act |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& a : kArchitectures) {
    t += "| `" + std::string(a.hf_class) + "` | `" + std::string(a.model_type) + "` | " +
         std::string(bias_words(a.qkv_bias)) + " | " + std::string(bias_words(a.o_bias)) + " | " +
         (a.qk_norm ? "yes" : "no") + " | " + (a.tie_word_embeddings_default ? "yes" : "no") + " | " +
         rope_type_list(a) + " | " +
         (a.default_sliding_window ? std::to_string(*a.default_sliding_window) : std::string("none")) + " | " +
         (a.use_sliding_window_default ? (*a.use_sliding_window_default ? "true" : "false") : "no such flag") +
         " | " + (a.reads_mlp_bias ? "read (true is rejected)" : "ignored") + " | " + std::to_string(a.default_max_position_embeddings) + " | " + std::string(a.hidden_act) + " |\n";
  }
  return t;
}

}  // namespace llmport
