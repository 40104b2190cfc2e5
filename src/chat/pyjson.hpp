#pragma once
// JSON <-> template values: messages and variables come in as JSON; the `tojson` filter is
// transformers' override, Python json.dumps(x, ensure_ascii=False, indent, separators,
// sort_keys) (default separators ", " and ": ", or "," and ": " with an indent; no HTML
// escaping, unlike Jinja2's own tojson).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/value.hpp"

namespace llmport::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  ///< nullopt: one line
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};

/// Python json.dumps. Throws RenderError for undefined or a callable/object value
/// ("Object of type Undefined is not JSON serializable").
std::string json_dumps(const Value& v, const JsonDumpOptions& opt);

/// JSON (nlohmann::json or ordered_json) -> value; objects keep the JSON's key order.
template <class Json>
Value from_json(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      auto u = j.template get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<std::int64_t>(u));
    }
    case nlohmann::json::value_t::number_float: return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string: return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      ValueList l;
      for (const auto& x : j) l.push_back(from_json(x));
      return Value::list(std::move(l));
    }
    case nlohmann::json::value_t::object: {
      ValueDict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.emplace_back(Value::string(it.key()), from_json(it.value()));
      return Value::dict(std::move(d));
    }
    default: return Value::none();
  }
}

}  // namespace llmport::jinja
