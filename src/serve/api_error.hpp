#pragma once
// An error answered in OpenAI's shape {"error": {"message", "type", "param", "code"}}.
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace llmport::serve {

class ApiError : public std::runtime_error {
 public:
  /// status: HTTP status; param: the request field at fault ("" = none).
  ApiError(int status, const std::string& message, std::string param = "")
      : std::runtime_error(message), status_(status), param_(std::move(param)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }
  nlohmann::json to_json() const;

 private:
  int status_;
  std::string param_;
};

/// OpenAI's error `type` and `code` for an HTTP status (e.g. 400 ->
/// "invalid_request_error", 401 -> "authentication_error" / "invalid_api_key").
nlohmann::json error_body(int status, const std::string& message, const std::string& param = "");

}  // namespace llmport::serve
