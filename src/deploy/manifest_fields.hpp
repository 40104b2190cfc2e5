#pragma once
// Typed reads of deployment.json's fields by path: a damaged record is named field by field
// ("phases[3].status: expected a string, got 5"), not by nlohmann's "type must be string,
// but is number", which names nothing.
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"

namespace llmport::deploy {

/// What a field holds, in an error message.
template <class T>
constexpr const char* field_kind() {
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  else if constexpr (std::is_same_v<T, bool>) return "true or false";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a list of strings";
  else if constexpr (std::is_same_v<T, std::vector<int>>) return "a list of integers";
  else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) return "an object of strings";
  else return "another type";
}

/// One JSON object of the record and its path ("" at the root, "model", "phases[3]").
/// Every read throws ConfigError "<path>.<key>: ..." (the caller names the file).
class ManifestFields {
 public:
  ManifestFields(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) throw ConfigError(where() + "expected an object, got " + json_excerpt(j_));
  }
  bool has(const char* key) const { return j_.contains(key); }
  const nlohmann::json& raw(const char* key) const {
    const auto it = j_.find(key);
    if (it == j_.end()) throw ConfigError(name(key) + ": missing");
    return *it;
  }
  ManifestFields object(const char* key) const { return {raw(key), name(key)}; }
  template <class T>
  T get(const char* key) const {
    return as<T>(raw(key), name(key));
  }
  template <class T>
  T get(const char* key, T fallback) const {
    return has(key) ? as<T>(j_.at(key), name(key)) : fallback;
  }
  /// An integer in [lo, hi] (json_integer's rules: an integral float is one).
  long long integer(const char* key, long long fallback, long long lo, long long hi) const {
    if (!has(key)) return fallback;
    try {
      return json_integer(j_.at(key), name(key), lo, hi);
    } catch (const ConfigError&) {
      throw ConfigError(name(key) + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                        "], got " + json_excerpt(j_.at(key)));
    }
  }
  std::string name(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  std::string where() const { return path_.empty() ? "" : path_ + ": "; }
  template <class T>
  static T as(const nlohmann::json& v, const std::string& name) {
    try {
      return v.get<T>();
    } catch (const nlohmann::json::exception&) {
      throw ConfigError(name + ": expected " + field_kind<T>() + ", got " + json_excerpt(v));
    }
  }
  const nlohmann::json& j_;
  std::string path_;
};

}  // namespace llmport::deploy
