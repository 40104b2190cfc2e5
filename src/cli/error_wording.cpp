#include "cli/error_wording.hpp"

#include <string_view>

namespace llmport::cli {

std::string parse_error_text(const CLI::ParseError& e) {
  std::string msg = e.what();
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    // CLI11's text is "Could not convert: NAME = VALUE": the only place NAME and VALUE are kept.
    constexpr std::string_view prefix = "Could not convert: ";
    const std::size_t eq = msg.find(" = ");
    if (msg.rfind(prefix, 0) == 0 && eq != std::string::npos) {
      const std::string name = msg.substr(prefix.size(), eq - prefix.size());
      const std::string value = msg.substr(eq + 3);
      return (name.empty() ? std::string("value") : name) + ": expects a whole number in range, got '" + value + "'";
    }
    return "a value could not be converted (" + msg + ")";
  }
  if (msg.rfind(": ", 0) == 0) msg.erase(0, 2);
  return msg;
}

std::string filesystem_error_text(const std::filesystem::filesystem_error& e) {
  const std::string what = e.what();
  std::string op = "cannot access";
  if (what.find("create dir") != std::string::npos) op = "cannot create directory";
  else if (what.find("copy") != std::string::npos) op = "cannot copy";
  else if (what.find("remove") != std::string::npos) op = "cannot remove";
  else if (what.find("rename") != std::string::npos) op = "cannot rename";
  const std::string path = e.path1().empty() ? std::string("(no path)") : e.path1().string();
  return path + ": " + op + " (" + e.code().message() + ")";
}

}  // namespace llmport::cli
