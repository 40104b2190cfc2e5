// The gate's field types (see gate_fields.hpp). One list: every key check_compat reads for
// an accepted-table class appears here with the type transformers' config class expects.
#include "model/gate_fields.hpp"

#include <string>

#include "model/json_fields.hpp"

namespace llmport::detail {

namespace {

[[noreturn]] void bad(const std::string& key, const char* expected, const json& got) {
  throw ConfigError("field '" + key + "': expected " + expected + ", got " + json_excerpt(got));
}

/// The value of `key` when present, null included.
const json* present(const json& c, const char* key) {
  auto it = c.find(key);
  return it == c.end() ? nullptr : &*it;
}

void expect_bool(const json& c, const char* key) {
  if (const json* v = field(c, key); v && !v->is_boolean()) bad(key, "true/false", *v);
}

void expect_string(const json& c, const char* key, bool null_ok) {
  const json* v = present(c, key);
  if (v && !v->is_string() && !(null_ok && v->is_null())) bad(key, "a string", *v);
}

/// An integer (an integral float such as 4096.0 too, as JSON writers emit) >= `min`.
void expect_int(const json& c, const char* key, long long min, bool null_ok) {
  const json* v = present(c, key);
  if (!v || (null_ok && v->is_null())) return;
  auto i = lenient_int(c, key);
  if (!i) bad(key, "an integer", *v);
  if (*i < min) bad(key, min == 0 ? "an integer >= 0" : "an integer >= 1", *v);
}

void expect_number(const json& c, const char* key) {
  if (const json* v = present(c, key); v && !v->is_number()) bad(key, "a number", *v);
}

void expect_string_list(const json& c, const char* key, const char* what) {
  const json* v = field(c, key);
  if (!v) return;
  if (!v->is_array()) bad(key, what, *v);
  for (const json& e : *v)
    if (!e.is_string()) bad(key, what, *v);
}

void expect_rope_object(const json& c, const char* key) {
  const json* v = field(c, key);
  if (!v) return;
  if (!v->is_object()) bad(key, "an object", *v);
  for (const char* t : {"rope_type", "type"})
    if (const json* tv = field(*v, t); tv && !tv->is_string()) bad(std::string(key) + "." + t, "a string", *tv);
}

}  // namespace

void validate_gate_fields(const json& c) {
  if (const json* a = field(c, "architectures"); a && !a->is_string())
    expect_string_list(c, "architectures", "a list of class names");
  expect_string(c, "model_type", true);
  if (const json* t = field(c, "text_config"); t && !t->is_object()) bad("text_config", "an object", *t);
  expect_bool(c, "is_encoder_decoder");
  for (const char* k : {"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"})
    expect_int(c, k, 0, true);
  // 0 is a number HF keeps (a Qwen2 config with use_sliding_window false ignores it).
  for (const char* k : {"sliding_window", "sliding_window_size"}) expect_int(c, k, 0, true);
  expect_bool(c, "use_sliding_window");
  expect_string_list(c, "layer_types", "a list of strings");
  if (const json* lt = field(c, "layer_types"); lt && lenient_int(c, "num_hidden_layers") &&
                                                static_cast<long long>(lt->size()) != *lenient_int(c, "num_hidden_layers"))
    throw ConfigError("field 'layer_types': " + std::to_string(lt->size()) + " entries, expected one per layer (" +
                      "num_hidden_layers " + std::to_string(*lenient_int(c, "num_hidden_layers")) + ")");
  expect_int(c, "max_position_embeddings", 1, false);
  expect_string(c, "hidden_act", false);
  expect_string(c, "hidden_activation", true);
  expect_bool(c, "mlp_bias");
  expect_number(c, "partial_rotary_factor");
  expect_number(c, "rope_theta");
  expect_number(c, "rms_norm_eps");
  expect_rope_object(c, "rope_scaling");
  expect_rope_object(c, "rope_parameters");
}

}  // namespace llmport::detail
