#pragma once
// Integers of the registry's JSON, read strictly: a float or an integer outside int is a
// malformed field. nlohmann's get<int> converts a float such as 8.9e115 with undefined
// behaviour (found by the registry fuzzer) and narrows a 64-bit integer silently.
#include <climits>
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"

namespace llmport::registry_json {

/// `v` as an int; ConfigError naming `field` when it is not an integer in int's range.
inline int to_int(const nlohmann::json& v, const std::string& field) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT_MAX)) return static_cast<int>(v.get<std::uint64_t>());
  } else if (v.is_number_integer()) {
    const std::int64_t x = v.get<std::int64_t>();
    if (x >= INT_MIN && x <= INT_MAX) return static_cast<int>(x);
  }
  throw ConfigError(field + ": expected an integer in the range of int, got " + v.dump());
}

/// An object of int values (a tile config or a kernel shape), each read by to_int.
inline std::map<std::string, int> to_int_map(const nlohmann::json& v, const std::string& field) {
  if (!v.is_object()) throw ConfigError(field + ": expected an object of integers, got " + v.type_name());
  std::map<std::string, int> out;
  for (const auto& [k, x] : v.items()) out[k] = to_int(x, field + "." + k);
  return out;
}

}  // namespace llmport::registry_json
