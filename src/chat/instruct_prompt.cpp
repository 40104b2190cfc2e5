// Instruct prompts: one user message (and an optional system message) through the
// tokenizer's chat template, tokenized as transformers' apply_chat_template(tokenize=True).
#include <algorithm>

#include "llmport/chat_template.hpp"
#include "llmport/error.hpp"
#include "llmport/tokenizer.hpp"

namespace llmport {

nlohmann::ordered_json special_token_vars(const Tokenizer& tok) {
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  if (!tok.bos_token().empty()) vars["bos_token"] = tok.bos_token();
  if (!tok.eos_token().empty()) vars["eos_token"] = tok.eos_token();
  return vars;
}

std::vector<int> instruct_prompt_ids(const Tokenizer& tok, const std::string& system, const std::string& prompt) {
  std::string src = tok.chat_template();
  if (src.empty())
    throw UsageError("the tokenizer has no chat_template (tokenizer_config.json or chat_template.jinja): "
                     "not an instruct model");
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", prompt}});
  EncodeOptions opt;
  opt.add_special_tokens = false;
  return tok.encode(ChatTemplate(src, tok.chat_template_origin()).render(messages, true, special_token_vars(tok)), opt);
}

std::vector<int> chat_stop_ids(const std::vector<int>& model_stop_ids, const Tokenizer& tok) {
  std::vector<int> ids = model_stop_ids;
  if (!tok.eos_token().empty())
    if (auto id = tok.token_to_id(tok.eos_token())) ids.push_back(*id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace llmport
