// `llmport detokenize MODEL 1 2 3`: prints the decoded text. Ids may also be given as one
// JSON array ("[1,2,3]"), so `tokenize` output can be passed back; `--jsonl FILE` decodes
// one JSON array per line (what `tokenize --jsonl` prints) with one tokenizer load.
#include <cctype>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/jsonl_input.hpp"
#include "cli/option_checks.hpp"
#include "cli/tokenizer_dir.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/tokenizer.hpp"

namespace llmport::cli {
namespace {

struct DetokenizeArgs {
  std::string model;
  std::vector<std::string> ids;
  std::vector<std::string> leading_ids;  // ids given before --model (add_model_arg)
  std::string jsonl;
  bool skip_special = false;
  bool json = false;
};

// `ids` (one IDS argument or --jsonl line, named by `where`) checked against the vocabulary;
// the element counts from 1 within them, as parse_id_list counts, and is left out for a
// lone id.
void check_ids(const Tokenizer& tok, const std::vector<int>& ids, const std::string& where) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= tok.vocab_size())
      throw UsageError(where + ": " + (ids.size() > 1 ? "element " + std::to_string(i + 1) + ": " : "") +
                       "token id " + std::to_string(ids[i]) + " is out of range (vocab size " +
                       std::to_string(tok.vocab_size()) + ")");
}

// Each IDS argument is one id, a comma list ("1,2,3") or one JSON array ("[1, 2, 3]"):
// parse_id_list's rule, the one --prompt-ids follows.
std::vector<int> parse_ids(const Tokenizer& tok, const std::vector<std::string>& args) {
  std::vector<int> ids;
  for (const auto& arg : args) {
    if (arg.size() > 1 && arg[0] == '-' && !std::isdigit(static_cast<unsigned char>(arg[1])))
      throw UsageError("detokenize: unknown option '" + arg + "' (see llmport detokenize --help)");
    const std::vector<int> part = parse_id_list(arg, "IDS");
    check_ids(tok, part, "IDS");
    ids.insert(ids.end(), part.begin(), part.end());
  }
  return ids;
}

std::string json_text(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// One JSON array of ids per line -> one JSON string per line.
void detokenize_jsonl(const Tokenizer& tok, const DetokenizeArgs& a) {
  for_each_jsonl_line(a.jsonl, "a JSON array of token ids", [&](const nlohmann::json& j, const std::string& where) {
    if (!j.is_array()) throw UsageError(where + ": not a JSON array of token ids");
    const std::vector<int> ids = json_token_ids(j, where);
    check_ids(tok, ids, where);
    std::cout << json_text(tok.decode(ids, a.skip_special)) << '\n';
  });
}

int run_detokenize(const DetokenizeArgs& a) {
  if (!a.jsonl.empty()) {
    if (!a.ids.empty()) throw UsageError("detokenize: give either IDS or --jsonl FILE, not both");
    detokenize_jsonl(*Tokenizer::load(tokenizer_dir(a.model)), a);
    return kExitOk;
  }
  // No IDS at all is a forgotten argument (or ids piped to stdin, which is not read), not
  // a request to decode nothing; an explicit "[]" still decodes to "".
  if (a.ids.empty())
    throw UsageError("detokenize: no token ids given (IDS after MODEL: 1 2 3, 1,2,3 or \"[1, 2, 3]\"; or --jsonl FILE)");
  auto tok = Tokenizer::load(tokenizer_dir(a.model));
  const std::vector<int> ids = parse_ids(*tok, a.ids);
  std::string text = tok->decode(ids, a.skip_special);
  std::cout << (a.json ? json_text(text) : text) << '\n';
  return kExitOk;
}

const Registrar reg{Command{
    "detokenize", "token ids -> text with the model's tokenizer.json",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<DetokenizeArgs>();
      add_model_arg(sub, &a->model, true, &a->leading_ids);
      // The ids are taken raw from what CLI11 leaves (allow_extras, extra_args: also those
      // after `--`) rather than from an IDS option: CLI11 splits an option's "[1,,2]" itself,
      // dropping the empty element, and leaves " 2" of "[1, 2]"; parse_ids reads a JSON array
      // whole and comma lists by one rule.
      sub.allow_extras();
      sub.footer("IDS: token ids after MODEL: separate arguments, comma lists (1,2,3) or one JSON array "
                 "(\"[1, 2, 3]\")");
      sub.add_flag("--skip-special", a->skip_special, "drop special tokens (skip_special_tokens=true)");
      sub.add_flag("--json", a->json, "print the text as a JSON string (exact, escaped)");
      sub.add_option("--jsonl", a->jsonl,
                     "file with one JSON array of token ids per line ('-' = stdin); prints one JSON string per line");
      CLI::App* app = &sub;
      return [a, app] {
        a->ids = a->leading_ids;
        for (std::string& w : extra_args(*app)) a->ids.push_back(std::move(w));
        return run_detokenize(*a);
      };
    }}};

}  // namespace
}  // namespace llmport::cli
