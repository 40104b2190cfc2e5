// `llmport status [NAME] [--workspace DIR] [--json]`: phase table of deployments.
#include <iostream>

#include "cli/command.hpp"
#include "llmport/deploy.hpp"

namespace llmport::cli {
namespace {

Registrar status_cmd{Command{
    "status", "phase table of one deployment (NAME) or of all deployments in the workspace",
    [](CLI::App& sub) -> std::function<int()> {
      auto name = std::make_shared<std::string>();
      auto ws = std::make_shared<std::string>("deployments");
      auto json = std::make_shared<bool>(false);
      sub.add_option("NAME", *name, "deployment name");
      CLI::Option* ws_opt =
          sub.add_option("--workspace", *ws, "directory holding deployments")->default_val("deployments");
      sub.add_flag("--json", *json, "print JSON");
      return [name, ws, json, ws_opt]() {
        // No default workspace yet just means nothing was deployed here; a --workspace the
        // user named that does not exist stays an error.
        if (name->empty() && default_workspace_absent(*ws_opt, *ws)) {
          if (*json)
            std::cout << "[]\n";
          else
            std::cout << "no deployments in " << *ws << "\n";
          return 0;
        }
        return deploy::print_status(*ws, *name, std::cout, *json);
      };
    }}};

}  // namespace
}  // namespace llmport::cli
