// Holds llmport's tokenizer to the texts a reference printed (reference_text.hpp).
#include "verify/reference_text.hpp"

#include <algorithm>
#include <vector>

namespace llmport::verify_detail {
namespace {

// `what`: ours "..." where the reference printed "...", around the first differing byte.
std::string differ(const std::string& what, const std::string& ours, const std::string& theirs) {
  const auto [a, b] = std::mismatch(ours.begin(), ours.end(), theirs.begin(), theirs.end());
  const std::size_t at = static_cast<std::size_t>(a - ours.begin());
  const std::size_t from = at > 24 ? at - 24 : 0;
  const auto window = [&](const std::string& s) { return "\"" + s.substr(std::min(from, s.size()), 48) + "\""; };
  (void)b;
  return what + " gives " + window(ours) + " where the reference printed " + window(theirs) + " (byte " +
         std::to_string(at) + ")";
}

}  // namespace

std::string reference_text_mismatch(const RecordSequence& g, const Tokenizer& tok, int* n_checked) {
  int checked = 0;
  const auto done = [&](std::string why) {
    if (n_checked) *n_checked = checked;
    return why;
  };
  std::vector<int> ids = g.prompt_ids;
  const std::vector<int> gen = g.tokens();
  ids.insert(ids.end(), gen.begin(), gen.end());
  if (!g.pieces.empty()) {
    for (std::size_t i = 0; i < ids.size() && i < g.pieces.size(); ++i)
      if (ids[i] < tok.vocab_size() && tok.id_to_token(ids[i]) != g.pieces[i])
        return done("id " + std::to_string(ids[i]) + " is the piece \"" + tok.id_to_token(ids[i]) +
                    "\" in llmport's tokenizer, \"" + g.pieces[i] + "\" in the reference's");
    ++checked;
  }
  const std::string text = tok.decode(ids, /*skip_special_tokens=*/true);
  if (g.full_text) {
    // A prompt the tokenizer cannot give back (special-token text, characters without a
    // piece) differs within its own length whoever decodes it; its ids are checked against
    // the reference's elsewhere. Differences past it are the generated text's.
    const std::size_t prompt_len = g.prompt ? g.prompt->size() : 0;
    const auto past_prompt = [&](const std::string& ours) {
      const auto [a, b] = std::mismatch(ours.begin(), ours.end(), g.full_text->begin(), g.full_text->end());
      (void)b;
      return static_cast<std::size_t>(a - ours.begin()) >= prompt_len;
    };
    if (text != *g.full_text && past_prompt(text)) return done(differ("decoding its ids", text, *g.full_text));
    checked += text == *g.full_text;
    const std::string round = tok.decode(tok.encode(*g.full_text), true);
    if (round != *g.full_text && past_prompt(round))
      return done(differ("encoding and decoding its text", round, *g.full_text));
    checked += round == *g.full_text;
  }
  if (g.completion_text) {
    const std::string prompt = tok.decode(g.prompt_ids, true);
    const bool ok = text.size() >= prompt.size() && text.compare(0, prompt.size(), prompt) == 0 &&
                    text.substr(prompt.size()) == *g.completion_text;
    if (!ok) return done(differ("decoding its generated ids after the prompt's", text, prompt + *g.completion_text));
    ++checked;
  }
  return done("");
}

}  // namespace llmport::verify_detail
