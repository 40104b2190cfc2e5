#pragma once
// The reference programs of the differential tests, run as child processes: Hugging Face's
// tokenizers through its Node binding (tests/tokenizer/node, `npm ci`), and Python's Jinja2
// set up as transformers renders chat templates (tests/chat/reference, python3-jinja2).
#include <string>
#include <vector>

namespace llmport::test {

/// Runs argv (argv[0] found on PATH) and returns its stdout, one entry per line. Throws
/// std::runtime_error with the command and its stderr when it exits non-zero.
std::vector<std::string> run_reference(const std::vector<std::string>& argv);

/// tests/<module>/node/<script>, after checking that `npm ci` installed <package> there;
/// throws std::runtime_error saying what to run otherwise.
std::string node_script(const std::string& module, const std::string& package, const std::string& script);

/// A Python 3 interpreter that imports `module` ("python3" on PATH, else /usr/bin/python3);
/// throws std::runtime_error naming the Debian package to install otherwise.
std::string python_with(const std::string& module, const std::string& debian_package);

}  // namespace llmport::test
