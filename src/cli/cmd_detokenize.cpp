// `llmport detokenize MODEL 1 2 3`: prints the decoded text. Ids may also be given as one
// JSON array ("[1,2,3]"), so `tokenize` output can be passed back.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/tokenizer_dir.hpp"
#include "llmport/error.hpp"
#include "llmport/tokenizer.hpp"

namespace llmport::cli {
namespace {

struct DetokenizeArgs {
  std::string model;
  std::vector<std::string> ids;
  bool skip_special = false;
  bool json = false;
};

std::vector<int> parse_ids(const std::vector<std::string>& args) {
  std::vector<int> ids;
  for (const auto& arg : args) {
    std::string s = arg;
    for (char& c : s)
      if (c == '[' || c == ']' || c == ',') c = ' ';
    std::size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && s[i] == ' ') ++i;
      if (i >= s.size()) break;
      std::size_t j = i;
      while (j < s.size() && s[j] != ' ') ++j;
      std::string t = s.substr(i, j - i);
      std::size_t used = 0;
      long long v = -1;
      try {
        v = std::stoll(t, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != t.size() || v < 0 || v > 0x7fffffff) throw UsageError("detokenize: '" + t + "' is not a token id");
      ids.push_back(static_cast<int>(v));
      i = j;
    }
  }
  return ids;
}

int run_detokenize(const DetokenizeArgs& a) {
  auto tok = Tokenizer::load(tokenizer_dir(a.model));
  std::vector<int> ids = parse_ids(a.ids);
  for (int id : ids)
    if (id >= tok->vocab_size())
      throw UsageError("detokenize: token id " + std::to_string(id) + " is out of range (vocab size " +
                       std::to_string(tok->vocab_size()) + ")");
  std::string text = tok->decode(ids, a.skip_special);
  if (a.json) {
    std::cout << nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  } else {
    std::cout << text << '\n';
  }
  return kExitOk;
}

const Registrar reg{Command{
    "detokenize", "token ids -> text with the model's tokenizer.json",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<DetokenizeArgs>();
      add_model_arg(sub, &a->model);
      sub.add_option("IDS", a->ids, "token ids (separate arguments or one JSON array)");
      sub.add_flag("--skip-special", a->skip_special, "drop special tokens (skip_special_tokens=true)");
      sub.add_flag("--json", a->json, "print the text as a JSON string (exact, escaped)");
      return [a] { return run_detokenize(*a); };
    }}};

}  // namespace
}  // namespace llmport::cli
