// Holds llmport's tokenizer to the texts a reference printed (reference_text.hpp).
#include "verify/reference_text.hpp"

#include <algorithm>
#include <optional>
#include <vector>

namespace llmport::verify_detail {
namespace {

// Byte offset where `a` and `b` part: their first differing byte, else the shorter one's end.
std::size_t parting(const std::string& a, const std::string& b) {
  return static_cast<std::size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

// Byte offset of the first difference of `a` and `b`, or npos when one is a prefix of the
// other (a golden cut to fewer steps keeps its longer text; only the overlap is compared).
std::size_t first_difference(const std::string& a, const std::string& b) {
  const std::size_t at = parting(a, b);
  return at >= std::min(a.size(), b.size()) ? std::string::npos : at;
}

// Ids cut inside a character decode to U+FFFD at the end: not a difference of the text.
std::string without_trailing_replacement(std::string s) {
  static const std::string kReplacement = "\xEF\xBF\xBD";
  while (s.size() >= 3 && s.compare(s.size() - 3, 3, kReplacement) == 0) s.resize(s.size() - 3);
  return s;
}

// `what` gives "..." where the reference printed "...", around byte `at`.
std::string differ(const std::string& what, const std::string& ours, const std::string& theirs, std::size_t at) {
  const std::size_t from = at > 24 ? at - 24 : 0;
  const auto window = [&](const std::string& s) { return "\"" + s.substr(std::min(from, s.size()), 48) + "\""; };
  return what + " gives " + window(ours) + " where the reference printed " + window(theirs) + " (byte " +
         std::to_string(at) + ")";
}

std::string pieces_mismatch(const std::vector<int>& ids, const std::vector<std::string>& pieces, const Tokenizer& tok) {
  for (std::size_t i = 0; i < ids.size() && i < pieces.size(); ++i)
    if (ids[i] >= 0 && ids[i] < tok.vocab_size() && tok.id_to_token(ids[i]) != pieces[i])
      return "id " + std::to_string(ids[i]) + " is the piece \"" + tok.id_to_token(ids[i]) +
             "\" in llmport's tokenizer, \"" + pieces[i] + "\" in the reference's";
  return "";
}

// What `llmport run` prints for `ids`: the streaming decoder, one id at a time (a decoder
// rule anchored at the text's end fires there, on each short window, and not on the whole).
std::string streamed(const Tokenizer& tok, const std::vector<int>& ids) {
  IncrementalDecoder dec(tok, /*skip_special_tokens=*/true);
  std::string out;
  for (const int id : ids) out += dec.push(id);
  return out + dec.flush();
}

}  // namespace

std::string reference_text_mismatch(const RecordSequence& g, const Tokenizer& tok, int* n_checked) {
  int checked = 0;
  const auto done = [&](std::string why) {
    if (n_checked) *n_checked = checked;
    return why;
  };
  const std::vector<int> gen = g.tokens();
  for (const auto& [ids, pieces] : {std::pair{&g.prompt_ids, &g.prompt_pieces}, std::pair{&gen, &g.generated_pieces}}) {
    if (pieces->empty()) continue;
    if (std::string why = pieces_mismatch(*ids, *pieces, tok); !why.empty()) return done(why);
    ++checked;
  }
  std::vector<int> ids = g.prompt_ids;
  ids.insert(ids.end(), gen.begin(), gen.end());
  // A prompt holding special tokens past its first id (special-token text, characters that
  // became <unk>) does not come back from any tokenizer: a difference within its text is
  // not judged then (its ids are checked against the reference's elsewhere). Otherwise the
  // prompt is text like the rest.
  const bool prompt_lossy = std::any_of(g.prompt_ids.begin() + (g.prompt_ids.empty() ? 0 : 1), g.prompt_ids.end(),
                                        [&](int id) { return id >= 0 && id < tok.vocab_size() && tok.is_special(id); });
  const std::size_t exempt = prompt_lossy && g.prompt ? g.prompt->size() : 0;
  // The generated text the reference printed: completion_text, else full_text past the prompt.
  std::optional<std::string> completion = g.completion_text;
  if (!completion && g.full_text && g.prompt && g.full_text->compare(0, g.prompt->size(), *g.prompt) == 0)
    completion = g.full_text->substr(g.prompt->size());
  const std::string prompt_text = tok.decode(g.prompt_ids, true);
  const std::string whole = without_trailing_replacement(tok.decode(ids, /*skip_special_tokens=*/true));
  const std::string stream = without_trailing_replacement(streamed(tok, ids));
  for (const auto& [how, text] : {std::pair{"decoding its ids", &whole}, std::pair{"streaming its ids (as run prints them)", &stream}}) {
    if (g.full_text) {
      const std::size_t at = first_difference(*text, *g.full_text);
      if (at != std::string::npos && at >= exempt) return done(differ(how, *text, *g.full_text, at));
      checked += at == std::string::npos;
    }
    if (completion) {
      if (text->compare(0, prompt_text.size(), prompt_text) != 0)
        return done(std::string(how) + ": the prompt's ids alone decode to a text that does not begin it (\"" +
                    prompt_text.substr(0, 48) + "\")");
      const std::string ours = text->substr(prompt_text.size());
      const std::size_t at = first_difference(ours, *completion);
      if (at != std::string::npos) return done(differ(std::string(how) + " after the prompt's", ours, *completion, at));
      ++checked;
    }
  }
  if (g.full_text) {
    // The whole text both ways: here a prefix is a difference too.
    const std::string round = tok.decode(tok.encode(*g.full_text), true);
    const bool same = round == *g.full_text;
    if (!same && parting(round, *g.full_text) >= exempt)
      return done(differ("encoding and decoding its text", round, *g.full_text, parting(round, *g.full_text)));
    checked += same;
  }
  return done("");
}

}  // namespace llmport::verify_detail
