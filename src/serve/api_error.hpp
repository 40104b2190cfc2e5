#pragma once
// An error answered in OpenAI's shape {"error": {"message", "type", "param", "code"}}.
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace llmport::serve {

class ApiError : public std::runtime_error {
 public:
  /// status: HTTP status; param: the request field at fault ("" = none); code: OpenAI's
  /// error code where it has one for the case ("context_length_exceeded"), else "" = the
  /// status's (error_body).
  ApiError(int status, const std::string& message, std::string param = "", std::string code = "")
      : std::runtime_error(message), status_(status), param_(std::move(param)), code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  nlohmann::json to_json() const;

 private:
  int status_;
  std::string param_;
  std::string code_;
};

/// OpenAI's error `type` and `code` for an HTTP status (e.g. 400 ->
/// "invalid_request_error", 401 -> "authentication_error" / "invalid_api_key"); a
/// non-empty `code` replaces the status's.
nlohmann::json error_body(int status, const std::string& message, const std::string& param = "",
                          const std::string& code = "");

}  // namespace llmport::serve
