// llama.cpp's HF-generated tokenizer test ids (tokenizers/llamacpp_reference): the README's
// table says which .out file belongs to which tokenizer folder; each line i of a .out file
// is encode(input i, add_special_tokens=false).
#include <fstream>
#include <sstream>

#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

using nlohmann::json;

std::vector<std::string> split_inputs(const std::string& joined) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (std::size_t f; (f = joined.find(sep, pos)) != std::string::npos; pos = f + sep.size())
    out.push_back(joined.substr(pos, f - pos));
  return out;  // the text after the trailing separator is empty, not a test
}

// Rows "| name.out | upstream | commit | folder[, folder] |" of README.md.
std::vector<std::pair<std::string, std::vector<std::string>>> out_files(const std::filesystem::path& readme) {
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  std::istringstream in(read_file(readme));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, '|');) {
      auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    if (cells.size() < 5 || cells[1].size() < 5 || cells[1].substr(cells[1].size() - 4) != ".out") continue;
    std::vector<std::string> folders;
    std::stringstream fs(cells[4]);
    for (std::string f; std::getline(fs, f, ',');) {
      auto b = f.find_first_not_of(' ');
      if (b != std::string::npos) folders.push_back(f.substr(b));
    }
    rows.emplace_back(cells[1], folders);
  }
  return rows;
}

TEST(LlamaCppReference, EveryOutFileReproduced) {
  auto dir = shared_path("tokenizers/llamacpp_reference");
  auto inputs = split_inputs(read_json(dir / "inp.json").get<std::string>());
  ASSERT_GE(inputs.size(), 40u);
  auto rows = out_files(dir / "README.md");
  ASSERT_GE(rows.size(), 3u) << "README table of .out files not found";
  int checked = 0;
  for (const auto& [file, folders] : rows) {
    std::ifstream f(dir / file);
    ASSERT_TRUE(f) << file;
    std::vector<std::vector<int>> expected;
    for (std::string line; std::getline(f, line);) {
      std::vector<int> ids;
      std::istringstream ls(line);
      for (int id; ls >> id;) ids.push_back(id);
      expected.push_back(ids);
    }
    // bpe.out has one more line than inp.json holds inputs; only inputs we have are checked.
    ASSERT_GE(expected.size(), inputs.size()) << file;
    for (const auto& folder : folders) {
      const Tokenizer& tok = cached_tokenizer(shared_path("tokenizers/" + folder));
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        EXPECT_EQ(tok.encode(inputs[i], {false, false}), expected[i]) << file << " / " << folder << " input " << i
                                                                       << ": " << json(inputs[i]).dump();
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 3 * 40);
}

}  // namespace
}  // namespace llmport::test
