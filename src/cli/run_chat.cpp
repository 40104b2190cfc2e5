#include "cli/run_chat.hpp"

#include <algorithm>
#include <istream>
#include <ostream>

#include "llmport/chat_template.hpp"
#include "llmport/error.hpp"
#include "llmport/generate.hpp"

namespace llmport::cli {

namespace {

ChatTemplate load_template(const Tokenizer& tok) {
  std::string src = tok.chat_template();
  if (src.empty())
    throw UsageError("the tokenizer has no chat_template (tokenizer_config.json or chat_template.jinja): "
                     "not an instruct model; use --raw for plain completion");
  return ChatTemplate(src, tok.chat_template_origin());
}

nlohmann::ordered_json message(const char* role, const std::string& content) {
  return nlohmann::ordered_json{{"role", role}, {"content", content}};
}

std::vector<int> encode_rendered(const Tokenizer& tok, const std::string& text) {
  EncodeOptions opt;
  opt.add_special_tokens = false;
  return tok.encode(text, opt);
}

}  // namespace

int run_chat_loop(Engine& engine, const Tokenizer& tok, const ChatOptions& opt, std::istream& in, std::ostream& out,
                  std::ostream& err, bool prompt_marker) {
  const ChatTemplate tmpl = load_template(tok);
  const nlohmann::ordered_json vars = special_token_vars(tok);
  const int context = engine.max_seq();
  nlohmann::ordered_json system = nlohmann::ordered_json::array();
  if (!opt.system.empty()) system.push_back(message("system", opt.system));
  nlohmann::ordered_json turns = nlohmann::ordered_json::array();  // user/assistant messages
  std::vector<int> cached;  // ids whose K/V are in the engine: [engine.pos()]
  Sampler sampler(opt.sampling);
  engine.reset();

  auto render_ids = [&] {
    nlohmann::ordered_json messages = system;
    for (const auto& m : turns) messages.push_back(m);
    return encode_rendered(tok, tmpl.render(messages, true, vars));
  };

  std::string line;
  while (true) {
    if (prompt_marker) out << "> " << std::flush;
    if (!std::getline(in, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "/reset") {
      turns = nlohmann::ordered_json::array();
      engine.reset();
      cached.clear();
      out << "(conversation reset)\n" << std::flush;
      continue;
    }
    if (line.empty()) continue;
    turns.push_back(message("user", line));

    // History within the context: drop the oldest turns (a user turn and what follows it
    // up to the next user turn) until the prompt leaves room for at least one token.
    std::vector<int> ids = render_ids();
    while (static_cast<int>(ids.size()) >= context && turns.size() > 1) {
      std::size_t drop = 1;
      while (drop < turns.size() - 1 && turns[drop]["role"] != "user") ++drop;
      turns.erase(turns.begin(), turns.begin() + static_cast<long>(drop));
      ids = render_ids();
    }
    if (static_cast<int>(ids.size()) >= context) {
      err << "error: the message is " << ids.size() << " tokens with the template, no room left in the context of "
          << context << " tokens\n"
          << std::flush;
      turns.erase(turns.end() - 1);
      continue;
    }

    // Reuse the K/V of the common prefix; at least the last prompt token is run again so
    // its logits are fresh.
    std::size_t keep = 0;
    while (keep < cached.size() && keep < ids.size() && cached[keep] == ids[keep]) ++keep;
    keep = std::min(keep, ids.size() - 1);
    engine.truncate(static_cast<int>(keep));
    std::vector<float> logits =
        engine.forward(std::span<const int>(ids.data() + keep, ids.size() - keep));  // [vocab]
    cached = ids;

    const int budget = std::min(opt.max_new_tokens, context - static_cast<int>(ids.size()));
    IncrementalDecoder dec(tok, /*skip_special_tokens=*/true);
    std::vector<int> answer;
    for (int step = 0; step < budget; ++step) {
      check_finite_logits(logits, step, static_cast<long>(cached.size()) - 1);
      const int id = sampler.sample(logits, cached);
      if (std::find(opt.stop_ids.begin(), opt.stop_ids.end(), id) != opt.stop_ids.end()) break;
      answer.push_back(id);
      out << dec.push(id) << std::flush;
      if (step + 1 == budget) break;
      logits = engine.decode_step(id);
      cached.push_back(id);
    }
    out << dec.flush() << "\n" << std::flush;
    turns.push_back(message("assistant", tok.decode(answer, /*skip_special_tokens=*/true)));
  }
  if (prompt_marker) out << "\n" << std::flush;
  return kExitOk;
}

}  // namespace llmport::cli
