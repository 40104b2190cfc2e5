// `llmport regress [--workspace DIR]`: re-verify every deployment (one per device at a time).
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
        if (default_workspace_absent(*ws_opt, *ws)) {
          std::cout << "no deployments in " << *ws << "\n";
          return 0;
        }
        return deploy::run_regress(*ws, std::cout);
      };
    }}};

}  // namespace
}  // namespace llmport::cli
