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
      sub.add_option("--workspace", *ws, "directory holding deployments")->default_val("deployments");
      sub.add_flag("--json", *json, "print JSON");
      return [name, ws, json]() { return deploy::print_status(*ws, *name, std::cout, *json); };
    }}};

}  // namespace
}  // namespace llmport::cli
