// Architecture gate: the rules written at the top of shared/configs/expected.json, plus our
// own lowest-precedence class unsupported_rope_scaling. Throws only for a table class whose
// gate fields are wrongly typed (gate_fields.hpp).
// What is accepted, and each class's deltas and defaults, come from the architecture table
// (architecture.hpp); the reason classes below are about everything else.
#include "llmport/compat.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "llmport/architecture.hpp"
#include "model/activation.hpp"
#include "model/gate_fields.hpp"
#include "model/json_fields.hpp"

namespace llmport {

using nlohmann::json;
using namespace detail;

namespace {

bool is_seq2seq_model_type(const std::string& mt) {
  static constexpr std::array<std::string_view, 24> kSeq2Seq = {
      "t5", "mt5", "umt5", "longt5", "bart", "mbart", "pegasus", "pegasus_x", "marian", "m2m_100",
      "blenderbot", "blenderbot-small", "led", "prophetnet", "xlm-prophetnet", "fsmt", "plbart",
      "bigbird_pegasus", "switch_transformers", "nllb-moe", "whisper", "speech_to_text", "mvp",
      "seamless_m4t"};
  return std::find(kSeq2Seq.begin(), kSeq2Seq.end(), mt) != kSeq2Seq.end();
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Informational resolved fields; exact for the table's classes (their rows' defaults and
/// deltas), null where a foreign config has no such notion. Lenient on purpose: a REJECT
/// still shows what it could read; an ACCEPT is resolved strictly by resolve_model_config.
json informational_resolved(const json& c, const std::string& arch, const Architecture* row, bool mla) {
  const bool family = row != nullptr;
  auto num = [](std::optional<long long> v) { return v ? json(*v) : json(nullptr); };
  json r = json::object();
  r["architecture"] = arch.empty() ? json(nullptr) : json(arch);
  r["model_type"] = field(c, "model_type") && field(c, "model_type")->is_string() ? *field(c, "model_type")
                                                                                   : json(nullptr);
  auto n_layers = lenient_int_any(c, {"num_hidden_layers", "n_layer", "num_layers"});
  auto emb = lenient_int_any(c, {"hidden_size", "n_embd", "d_model"});
  auto heads = lenient_int_any(c, {"num_attention_heads", "n_head", "num_heads"});
  auto kv = lenient_int(c, "num_key_value_heads");
  if (!kv && family) kv = heads;
  std::optional<long long> hd;
  if (!mla) {
    hd = lenient_int_any(c, {"head_dim", "d_kv"});
    if (!hd && emb && heads && *heads > 0) hd = *emb / *heads;
  }
  auto hidden = lenient_int_any(c, {"intermediate_size", "n_inner", "d_ff", "ffn_dim"});
  if (!hidden && lenient_int(c, "n_embd")) hidden = 4 * *lenient_int(c, "n_embd");  // GPT-2 default
  r["n_layers"] = num(n_layers);
  r["emb_dim"] = num(emb);
  r["n_heads"] = num(heads);
  r["n_kv_heads"] = num(kv);
  r["head_dim"] = num(hd);
  r["hidden_dim"] = num(hidden);
  r["vocab_size"] = num(lenient_int(c, "vocab_size"));
  const json* rs = rope_scaling_of(c);
  std::optional<double> theta = lenient_double(c, "rope_theta");
  if (!theta && rs) theta = lenient_double(*rs, "rope_theta");
  if (!theta && family) theta = row->default_rope_theta;
  r["rope_theta"] = theta ? json(*theta) : json(nullptr);
  auto tie = lenient_bool(c, "tie_word_embeddings");
  if (!tie && family) tie = row->tie_word_embeddings_default;
  r["tie_word_embeddings"] = tie ? json(*tie) : json(nullptr);
  std::optional<bool> qkv_bias = lenient_bool(c, "attention_bias");
  if (family) qkv_bias = bias_present(row->qkv_bias, qkv_bias.value_or(false));
  r["qkv_bias"] = qkv_bias ? json(*qkv_bias) : json(nullptr);
  r["qk_norm"] = family ? json(row->qk_norm) : json(nullptr);
  std::string rt = rope_type_of(rs);
  r["rope_scaling_type"] = (rt == "none" || rt.empty()) ? json(nullptr) : json(rt);
  r["max_position_embeddings"] = num(lenient_int_any(c, {"max_position_embeddings", "n_positions"}));
  r["rms_norm_eps"] = lenient_double(c, "rms_norm_eps") ? json(*lenient_double(c, "rms_norm_eps")) : json(nullptr);
  std::string dt = torch_dtype_of(c);
  r["torch_dtype"] = dt.empty() ? json(nullptr) : json(dt);
  return r;
}

/// Why a config of a table class is a variant the engine does not implement (empty: none).
/// Every key here is one the class's transformers code reads; see gate_fields.hpp for types.
std::vector<std::string> variant_problems(const json& c, const Architecture& row, const std::string& model_type) {
  std::vector<std::string> out;
  // transformers builds the config class (and so the model) from model_type, not from
  // architectures: a contradicting pair is not the class it claims to be.
  if (!model_type.empty() && model_type != row.model_type)
    out.push_back("model_type '" + model_type + "' contradicts architectures[0] " + std::string(row.hf_class) +
                  " (whose model_type is '" + std::string(row.model_type) + "')");
  const json* act = field(c, "hidden_act");
  if (!act) act = field(c, "hidden_activation");
  if (act && !activation_matches(act->get<std::string>(), row.hidden_act))
    out.push_back("hidden_act " + act->get<std::string>() + " is not " + std::string(row.hidden_act));
  if (row.reads_mlp_bias && lenient_bool(c, "mlp_bias").value_or(false))
    out.push_back("mlp_bias true (biases on gate/up/down_proj) is not implemented");
  // The RoPE init functions of transformers rotate int(head_dim * partial_rotary_factor) dims.
  if (auto f = lenient_double(c, "partial_rotary_factor"); f && *f != 1.0)
    out.push_back("partial_rotary_factor " + json_excerpt(*field(c, "partial_rotary_factor")) +
                  " (RoPE on part of each head) is not implemented");
  // v5 reads it inside rope_parameters too (standardize_rope_params).
  else if (const json* rs = rope_scaling_of(c); rs && rs->is_object())
    if (auto g = lenient_double(*rs, "partial_rotary_factor"); g && *g != 1.0)
      out.push_back("partial_rotary_factor " + json_excerpt(*field(*rs, "partial_rotary_factor")) +
                    " in the RoPE parameters (RoPE on part of each head) is not implemented");
  if (const json* lt = field(c, "layer_types"))
    for (const json& t : *lt)
      if (t != "full_attention" && t != "sliding_attention") {
        out.push_back("layer_types entry '" + t.get<std::string>() + "' is not implemented (full_attention only)");
        break;
      }
  return out;
}

}  // namespace

CompatResult check_compat(const json& config, std::optional<int> max_seq) {
  // Multimodal wrappers (Gemma3ForConditionalGeneration, Llama4ForConditionalGeneration)
  // keep the decoder's fields in text_config; classify on those, top-level keys winning.
  json c = json::object();
  if (config.is_object()) {
    if (const json* tc = field(config, "text_config"); tc && tc->is_object()) c = *tc;
    for (auto it = config.begin(); it != config.end(); ++it)
      if (!it.value().is_null() || !c.contains(it.key())) c[it.key()] = it.value();
  }
  CompatResult res;
  const std::string arch = architecture_of(c);
  const Architecture* row = find_architecture(arch);
  // A class of the table could be ACCEPTed: a wrongly typed field it decides on is bad
  // input (ConfigError), never skipped.
  if (row) validate_gate_fields(c);
  const std::string model_type = lenient_string(c, "model_type").value_or("");
  std::vector<std::string> details;  // one short phrase per reason, same order

  // encoder_decoder
  bool enc_dec = lenient_bool(c, "is_encoder_decoder").value_or(false);
  if (!enc_dec && ends_with(arch, "ForConditionalGeneration"))
    enc_dec = is_seq2seq_model_type(model_type) || field(c, "num_decoder_layers") ||
              field(c, "decoder_layers") || field(c, "encoder_layers");
  if (enc_dec) {
    res.reasons.push_back("encoder_decoder");
    details.push_back("encoder-decoder (seq2seq) model");
  }

  // mla
  bool mla = false;
  for (const char* k : {"kv_lora_rank", "q_lora_rank", "qk_rope_head_dim"}) {
    if (field(c, k)) {
      mla = true;
      details.push_back(std::string("multi-head latent attention (") + k + " = " + json_excerpt(*field(c, k)) + ")");
      break;
    }
  }
  if (mla) res.reasons.push_back("mla");

  // moe
  for (const char* k : {"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"}) {
    auto n = lenient_int(c, k);
    if (n && *n > 0) {
      res.reasons.push_back("moe");
      details.push_back("mixture of experts (" + std::string(k) + " = " + std::to_string(*n) + ")");
      break;
    }
  }

  // sliding_window ("effective")
  auto window = sliding_window_of(c, row);
  const bool default_window = window && !lenient_int_any(c, {"sliding_window", "sliding_window_size"});
  auto mpe = lenient_int(c, "max_position_embeddings");
  if (!mpe && row) mpe = row->default_max_position_embeddings;
  // Qwen2Config/Qwen3Config default use_sliding_window to false: their window is then ignored.
  auto use_sw = lenient_bool(c, "use_sliding_window");
  if (!use_sw && row) use_sw = row->use_sliding_window_default;
  // MistralConfig (and LlamaConfig) have no such flag: a false one does not switch their
  // window off (a true one still counts, as the rules say for any config).
  if (row && !row->use_sliding_window_default && use_sw && !*use_sw) use_sw.reset();
  std::string sw_why;
  if (use_sw && *use_sw) {
    sw_why = "use_sliding_window true";
  } else if (const json* lt = field(c, "layer_types");
             lt && lt->is_array() && std::find(lt->begin(), lt->end(), json("sliding_attention")) != lt->end()) {
    sw_why = "layer_types contains sliding_attention";
  } else if (!use_sw && window && (!mpe || *window < *mpe)) {
    sw_why = std::string(default_window ? "no sliding_window key: MistralConfig's default " : "sliding_window ") +
             std::to_string(*window) +
             (mpe ? " < max_position_embeddings " + std::to_string(*mpe) : std::string());
  }
  if (!sw_why.empty()) {
    if (max_seq && window && *max_seq > 0 && *max_seq <= *window) {
      res.context_cap = *max_seq;
      res.notes.push_back(sw_why + ": --max-seq " + std::to_string(*max_seq) + " <= window " +
                          std::to_string(*window) +
                          ", so sliding-window attention equals full attention; context capped at " +
                          std::to_string(*max_seq) + " tokens");
    } else {
      res.reasons.push_back("sliding_window");
      details.push_back("sliding-window attention (" + sw_why +
                        (window ? "; --max-seq N <= " + std::to_string(*window) + " would accept it)" : ")"));
    }
  }

  // unsupported_architecture
  if (!row) {
    res.reasons.push_back("unsupported_architecture");
    details.push_back("architecture " + (arch.empty() ? std::string("(none given)") : arch) + " is not one of " +
                      accepted_architecture_list());
  } else if (auto problems = variant_problems(c, *row, model_type); !problems.empty()) {
    res.reasons.push_back("unsupported_architecture");
    std::string d;
    for (std::size_t i = 0; i < problems.size(); ++i) d += (i ? ", " : "") + problems[i];
    details.push_back(d);
  }

  // unsupported_rope_scaling: only for an otherwise accepted model (so `row` is set).
  if (res.reasons.empty()) {
    const json* rs = rope_scaling_of(c);
    std::string rt = rope_type_of(rs);
    if (!rt.empty() && !rope_type_allowed(*row, rt)) {
      res.reasons.push_back("unsupported_rope_scaling");
      details.push_back("rope_scaling type '" + rt + "' is not supported (" + rope_type_list(*row) + ")");
    }
  }

  res.accepted = res.reasons.empty();
  res.resolved = informational_resolved(c, arch, row, mla);
  if (res.accepted) {
    res.message = "ACCEPT: " + arch + " (" + (model_type.empty() ? "?" : model_type) + ")";
  } else {
    res.reason = res.reasons.front();
    res.message = "REJECT (" + res.reason + "): " + (arch.empty() ? std::string("?") : arch) + ": ";
    for (std::size_t i = 0; i < details.size(); ++i) res.message += (i ? "; " : "") + details[i];
  }
  return res;
}

}  // namespace llmport
