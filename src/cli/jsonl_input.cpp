#include "cli/jsonl_input.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"

namespace llmport::cli {

void for_each_jsonl_line(const std::string& path, const std::string& expected,
                         const std::function<void(const nlohmann::json&, const std::string&)>& each) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    // An ifstream "opens" a directory and then reads nothing: refuse it like read_text_file does.
    if (std::filesystem::is_directory(path)) throw UsageError("--jsonl " + path + ": is a directory, expected a file");
    file.open(path, std::ios::binary);
    if (!file) throw UsageError("--jsonl " + path + ": cannot open");
    in = &file;
  }
  std::string line;
  for (std::size_t n = 1; std::getline(*in, line); ++n) {
    const std::string where = path + ":" + std::to_string(n);
    nlohmann::json j;
    try {
      j = parse_json_text(line, where);
    } catch (const ConfigError& e) {
      throw UsageError(std::string(e.what()) + " (expected " + expected + ")");
    }
    each(j, where);
  }
}

}  // namespace llmport::cli
