#include "serve/api_error.hpp"

namespace llmport::serve {

nlohmann::json error_body(int status, const std::string& message, const std::string& param,
                          const std::string& code_override) {
  std::string type = "invalid_request_error";
  nlohmann::json code = nullptr;
  switch (status) {
    case 401: type = "authentication_error"; code = "invalid_api_key"; break;
    case 404: code = "not_found"; break;
    case 405: code = "method_not_allowed"; break;
    case 413: code = "request_too_large"; break;
    case 415: code = "unsupported_media_type"; break;
    case 429: type = "rate_limit_error"; code = "rate_limit_exceeded"; break;
    case 501: code = "method_not_implemented"; break;  // the client's method, not a server fault
    case 503: type = "server_error"; code = "unavailable"; break;
    default:
      if (status >= 500) type = "server_error";
  }
  if (!code_override.empty()) code = code_override;
  return {{"error", {{"message", message},
                     {"type", type},
                     {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                     {"code", code}}}};
}

nlohmann::json ApiError::to_json() const { return error_body(status_, what(), param_, code_); }

}  // namespace llmport::serve
