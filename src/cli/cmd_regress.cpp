// `llmport regress [--workspace DIR]`: re-verify every deployment (one per device at a time).
#include <filesystem>
#include <iostream>

#include "cli/command.hpp"
#include "llmport/deploy.hpp"

namespace llmport::cli {
namespace {

Registrar regress_cmd{Command{
    "regress", "re-verify every deployment in the workspace (e.g. after the kernel registry changed)",
    [](CLI::App& sub) -> std::function<int()> {
      auto ws = std::make_shared<std::string>("deployments");
      CLI::Option* ws_opt =
          sub.add_option("--workspace", *ws, "directory holding deployments")->default_val("deployments");
      return [ws, ws_opt]() {
        // As `status`: no default workspace yet means nothing was deployed here (nothing to
        // re-verify); a --workspace the user named that does not exist stays an error.
        std::error_code ec;  // absent altogether; a dangling link or a file is named below
        if (ws_opt->count() == 0 && !std::filesystem::exists(std::filesystem::symlink_status(*ws, ec))) {
          std::cout << "no deployments in " << *ws << "\n";
          return 0;
        }
        return deploy::run_regress(*ws, std::cout);
      };
    }}};

}  // namespace
}  // namespace llmport::cli
