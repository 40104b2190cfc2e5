#pragma once
// Tolerant readers of config.json fields. `lenient_*` never throw (the architecture gate
// must classify a config whose fields it cannot parse); `require_*`/`strict_*` throw
// ConfigError naming the field (used only once an architecture is accepted).
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/architecture.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"

namespace llmport::detail {

using nlohmann::json;

/// Value of `key` when `j` is an object holding a non-null value there.
inline const json* field(const json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

/// An integer (or an integral float such as 4096.0); nullopt for anything else.
inline std::optional<long long> lenient_int(const json& j, std::string_view key) {
  const json* v = field(j, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<long long>();
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<long long>(d);
  }
  return std::nullopt;
}

inline std::optional<double> lenient_double(const json& j, std::string_view key) {
  const json* v = field(j, key);
  if (!v || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

inline std::optional<bool> lenient_bool(const json& j, std::string_view key) {
  const json* v = field(j, key);
  if (!v || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

inline std::optional<std::string> lenient_string(const json& j, std::string_view key) {
  const json* v = field(j, key);
  if (!v || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

/// First key among `keys` holding an integer.
inline std::optional<long long> lenient_int_any(const json& j, std::initializer_list<std::string_view> keys) {
  for (auto k : keys)
    if (auto v = lenient_int(j, k)) return v;
  return std::nullopt;
}


/// Integer field that must be present (when `required`) and an integer >= `min`.
inline std::optional<long long> strict_int(const json& j, std::string_view key, bool required,
                                           long long min, const std::string& who) {
  const json* v = field(j, key);
  if (!v) {
    if (required) throw ConfigError("field '" + std::string(key) + "' is missing (needed by " + who + ")");
    return std::nullopt;
  }
  auto i = lenient_int(j, key);
  if (!i) throw ConfigError("field '" + std::string(key) + "': expected an integer, got " + json_excerpt(*v));
  if (*i < min)
    throw ConfigError("field '" + std::string(key) + "': " + std::to_string(*i) + " must be >= " +
                      std::to_string(min));
  if (*i > 2147483647LL)
    throw ConfigError("field '" + std::string(key) + "': " + std::to_string(*i) + " is too large");
  return i;
}

inline std::optional<double> strict_double(const json& j, std::string_view key) {
  const json* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw ConfigError("field '" + std::string(key) + "': expected a number, got " + json_excerpt(*v));
  return v->get<double>();
}

inline std::optional<bool> strict_bool(const json& j, std::string_view key) {
  const json* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw ConfigError("field '" + std::string(key) + "': expected true/false, got " + json_excerpt(*v));
  return v->get<bool>();
}

/// Token id field: an int or a list of ints (HF allows both for bos/eos). Strict: each id
/// must fit an int (never narrowed); the caller checks it against the vocabulary.
inline std::vector<int> strict_ids(const json& j, std::string_view key) {
  const json* v = field(j, key);
  std::vector<int> out;
  if (!v) return out;
  auto bad = [&] {
    return ConfigError("field '" + std::string(key) + "': expected a token id or a list of ids, got " + json_excerpt(*v));
  };
  auto one = [&](const json& e, const std::string& name) {
    if (!e.is_number_integer()) throw bad();
    out.push_back(static_cast<int>(json_integer(e, name, 0, 2147483647LL)));
  };
  if (v->is_number_integer()) {
    one(*v, std::string(key));
  } else if (v->is_array()) {
    for (std::size_t i = 0; i < v->size(); ++i) one((*v)[i], std::string(key) + "[" + std::to_string(i) + "]");
  } else {
    throw bad();
  }
  return out;
}

/// Architecture class: architectures[0], else the class whose table row has this
/// model_type (transformers' auto mapping). "" when unknown.
inline std::string architecture_of(const json& config) {
  if (const json* a = field(config, "architectures")) {
    if (a->is_array() && !a->empty() && (*a)[0].is_string()) return (*a)[0].get<std::string>();
    if (a->is_string()) return a->get<std::string>();
  }
  const Architecture* row = architecture_for_model_type(lenient_string(config, "model_type").value_or(""));
  return row ? std::string(row->hf_class) : std::string();
}

/// The RoPE scaling object: `rope_scaling`, or transformers v5 `rope_parameters`.
inline const json* rope_scaling_of(const json& config) {
  if (const json* r = field(config, "rope_scaling")) return r;
  return field(config, "rope_parameters");
}

/// Normalized rope type of a scaling object ("rope_type", legacy "type"); "none" for
/// default/absent; "" when it cannot be read.
inline std::string rope_type_of(const json* rs) {
  if (!rs) return "none";
  if (!rs->is_object()) return "";
  auto t = lenient_string(*rs, "rope_type");
  if (!t) t = lenient_string(*rs, "type");
  if (!t) return rs->contains("rope_type") || rs->contains("type") ? "" : "none";
  if (*t == "default" || t->empty()) return "none";
  return *t;
}

/// dtype spelling: `torch_dtype` or the newer `dtype`, without a "torch." prefix.
inline std::string torch_dtype_of(const json& config) {
  auto d = lenient_string(config, "torch_dtype");
  if (!d) d = lenient_string(config, "dtype");
  std::string s = d.value_or("");
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  return s;
}

/// The sliding-window size a config declares: sliding_window (or sliding_window_size);
/// without either key, the row's default (MistralConfig's 4096; an explicit null means no
/// window). `row` may be null (no default).
inline std::optional<long long> sliding_window_of(const json& c, const Architecture* row) {
  if (auto w = lenient_int_any(c, {"sliding_window", "sliding_window_size"})) return w;
  if (row && row->default_sliding_window && c.is_object() && !c.contains("sliding_window") &&
      !c.contains("sliding_window_size"))
    return *row->default_sliding_window;
  return std::nullopt;
}

}  // namespace llmport::detail
