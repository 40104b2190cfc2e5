#pragma once
// Typed access to JSON fields with errors that name the file and the field path
// (e.g. "golden.json: cases[3].steps[4].top5: expected an array").
#include <cmath>
#include <cstdint>
#include <limits>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"

namespace llmport::verify_detail {

class JsonField {
 public:
  JsonField(const nlohmann::json& j, std::filesystem::path file, std::string path)
      : j_(j), file_(std::move(file)), path_(std::move(path)) {}

  /// "<file>: <path>: <what>", the one line that names this field.
  std::string message(const std::string& what) const {
    return file_.string() + ": " + (path_.empty() ? "<root>" : path_) + ": " + what;
  }
  [[noreturn]] void fail(const std::string& what) const { throw ConfigError(message(what)); }
  bool has(const std::string& key) const { return j_.is_object() && j_.contains(key) && !j_.at(key).is_null(); }
  JsonField at(const std::string& key) const {
    if (!j_.is_object()) fail("expected an object");
    if (!j_.contains(key)) JsonField(j_, file_, sub(key)).fail("missing");
    return JsonField(j_.at(key), file_, sub(key));
  }
  JsonField at(std::size_t i) const {
    return JsonField(j_.at(i), file_, path_ + "[" + std::to_string(i) + "]");
  }
  std::size_t size() const {
    if (!j_.is_array()) fail("expected an array");
    return j_.size();
  }
  std::string str() const {
    if (!j_.is_string()) fail("expected a string");
    return j_.get<std::string>();
  }
  int integer() const {
    if (!j_.is_number_integer()) fail("expected an integer");
    // Never narrowed: 2^32 + 5 is not 5.
    if (j_.is_number_unsigned() ? j_.get<std::uint64_t>() > 2147483647u
                                : (j_.get<std::int64_t>() > 2147483647 || j_.get<std::int64_t>() < -2147483647 - 1))
      fail(j_.dump() + " does not fit a 32-bit integer");
    return j_.get<int>();
  }
  double number() const {
    if (!j_.is_number()) fail("expected a number");
    return j_.get<double>();
  }
  /// A number a float32 holds: a record's logits, logsumexp and hidden states are float32,
  /// and 1e39 would become inf (a NaN KL, or a non-finite "engine output" in diagnosis)
  /// instead of being named here.
  double float32() const {
    const double v = number();
    if (!(std::abs(v) <= static_cast<double>(std::numeric_limits<float>::max())))
      fail(j_.dump() + " is beyond the float32 range (|x| <= 3.4028235e38)");
    return v;
  }
  std::vector<int> ints() const {
    std::vector<int> v(size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = at(i).integer();
    return v;
  }
  std::vector<float> floats() const {
    std::vector<float> v(size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(at(i).float32());
    return v;
  }
  const nlohmann::json& raw() const { return j_; }
  const std::string& path() const { return path_; }

 private:
  std::string sub(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const nlohmann::json& j_;
  std::filesystem::path file_;
  std::string path_;
};

}  // namespace llmport::verify_detail
