// `llmport tokenize MODEL "text"`: prints the token ids as one JSON array line.
// `--jsonl FILE` encodes one JSON string per line (one tokenizer load for the whole file).
#include <iostream>
#include <iterator>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/jsonl_input.hpp"
#include "cli/tokenizer_dir.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/tokenizer.hpp"

namespace llmport::cli {
namespace {

struct TokenizeArgs {
  std::string model;
  std::string text;
  std::string jsonl;
  bool no_special = false;
  bool split_special = false;
  bool have_text = false;
};

std::string ids_json(const std::vector<int>& ids) { return nlohmann::json(ids).dump(); }

int run_tokenize(const TokenizeArgs& a) {
  auto tok = Tokenizer::load(tokenizer_dir(a.model));
  warn_tokenizer_disagreements(*tok, std::cerr);
  EncodeOptions opt;
  opt.add_special_tokens = !a.no_special;
  opt.split_special_tokens = a.split_special;
  if (!a.jsonl.empty()) {
    if (a.have_text) throw UsageError("tokenize: give either TEXT or --jsonl FILE, not both");
    for_each_jsonl_line(a.jsonl, "a JSON string", [&](const nlohmann::json& j, const std::string& where) {
      if (!j.is_string()) throw UsageError(where + ": not a JSON string");
      std::cout << ids_json(tok->encode(j.get<std::string>(), opt)) << '\n';
    });
    return kExitOk;
  }
  std::string text = a.text;
  if (!a.have_text) text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  std::cout << ids_json(tok->encode(text, opt)) << '\n';
  return kExitOk;
}

const Registrar reg{Command{
    "tokenize", "text -> token ids with the model's tokenizer.json (prints a JSON array)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<TokenizeArgs>();
      add_model_arg(sub, &a->model);
      auto* text = sub.add_option("TEXT", a->text, "text to tokenize (read from stdin when omitted)");
      sub.add_option("--jsonl", a->jsonl,
                     "file with one JSON string per line ('-' = stdin); prints one JSON array per line");
      sub.add_flag("--no-special", a->no_special, "do not add BOS/EOS (add_special_tokens=false)");
      sub.add_flag("--split-special", a->split_special,
                   "treat special-token text as plain text (safe for untrusted input)");
      return [a, text] {
        a->have_text = text->count() > 0;
        return run_tokenize(*a);
      };
    }}};

}  // namespace
}  // namespace llmport::cli
