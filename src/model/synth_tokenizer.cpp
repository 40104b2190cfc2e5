// The printable-ASCII BPE tokenizer of synthetic models (see synth_tokenizer.hpp).
#include "llmport/synth_tokenizer.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "llmport/error.hpp"

namespace llmport {
using nlohmann::json;

namespace {

constexpr const char* kLower = "etaoinshrdlcumwfgypbvkjxqz";  // English letter frequency
constexpr const char* kUpper = "ETAOINSHRDLCUMWFGYPBVKJXQZ";
constexpr const char* kDigits = "0123456789";

// The 95 printable characters: space and letters first (they start the merges), then the rest
// of 0x21..0x7e in code order.
std::vector<std::string> alphabet() {
  std::string order = std::string(" ") + kLower + kUpper + kDigits;
  for (char c = 0x21; c < 0x7f; ++c)
    if (order.find(c) == std::string::npos) order += c;
  std::vector<std::string> out;
  for (char c : order) out.emplace_back(1, c);
  return out;
}

// A piece that merges may extend: " ", or an optional space, a letter, lowercase letters.
bool extendable(const std::string& p) {
  if (p == " ") return true;
  const std::size_t s = p[0] == ' ' ? 1 : 0;
  if (s >= p.size() || !std::isalpha(static_cast<unsigned char>(p[s]))) return false;
  return std::all_of(p.begin() + static_cast<std::ptrdiff_t>(s) + 1, p.end(),
                     [](char c) { return c >= 'a' && c <= 'z'; });
}

// Special tokens by id: "<s>" for BOS, "</s>" then "<|eos_k|>" for the EOS ids.
std::map<int, std::string> special_tokens(int vocab_size, std::optional<int> bos, const std::vector<int>& eos) {
  auto check = [&](int id, const char* what) {
    if (id < 0 || id >= vocab_size)
      throw UsageError(fmt::format("synth tokenizer: {} id {} is outside the vocabulary [0, {})", what, id, vocab_size));
  };
  std::map<int, std::string> out;
  for (std::size_t k = 0; k < eos.size(); ++k) {
    check(eos[k], "eos");
    out.emplace(eos[k], k == 0 ? std::string("</s>") : fmt::format("<|eos_{}|>", k));
  }
  if (bos) {
    check(*bos, "bos");
    out.emplace(*bos, "<s>");  // an id that is also an EOS keeps its EOS name
  }
  return out;
}

// Ordinary pieces and their merges, breadth-first until `n` pieces exist.
std::pair<std::vector<std::string>, json> pieces_and_merges(std::size_t n) {
  std::vector<std::string> pieces = alphabet();
  json merges = json::array();
  for (std::size_t i = 0; pieces.size() < n; ++i) {
    const std::string p = pieces[i];  // i < pieces.size(): " " is extendable, so the list grows
    if (!extendable(p)) continue;
    for (const char* c = kLower; *c && pieces.size() < n; ++c) {
      pieces.push_back(p + *c);
      merges.push_back(json::array({p, std::string(1, *c)}));
    }
  }
  pieces.resize(std::min(pieces.size(), n));
  return {std::move(pieces), std::move(merges)};
}

json post_processor(const std::map<int, std::string>& specials, std::optional<int> bos) {
  if (!bos) return nullptr;
  const std::string& b = specials.at(*bos);
  const json tok = {{"SpecialToken", {{"id", b}, {"type_id", 0}}}};
  auto seq = [](const char* s, int type) { return json{{"Sequence", {{"id", s}, {"type_id", type}}}}; };
  return {{"type", "TemplateProcessing"},
          {"single", {tok, seq("A", 0)}},
          {"pair", {tok, seq("A", 0), tok, seq("B", 1)}},
          {"special_tokens", {{b, {{"id", b}, {"ids", {*bos}}, {"tokens", {b}}}}}}};
}

}  // namespace

SynthTokenizer ascii_bpe_tokenizer(int vocab_size, std::optional<int> bos_id, const std::vector<int>& eos_ids,
                                   int model_max_length) {
  const auto specials = special_tokens(vocab_size, bos_id, eos_ids);
  const int n_pieces = vocab_size - static_cast<int>(specials.size());
  if (n_pieces < kAsciiAlphabetSize)
    throw UsageError(fmt::format("synth tokenizer: vocab_size {} is too small for the {} printable ASCII "
                                 "characters and {} special tokens",
                                 vocab_size, kAsciiAlphabetSize, specials.size()));
  auto [pieces, merges] = pieces_and_merges(static_cast<std::size_t>(n_pieces));
  // Ids: the specials where the config puts them, the pieces in order around them.
  json vocab = json::object();
  json added = json::array();
  std::size_t next = 0;
  for (int id = 0; id < vocab_size; ++id) {
    if (auto s = specials.find(id); s != specials.end()) {
      vocab[s->second] = id;
      added.push_back({{"id", id}, {"content", s->second}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", true}});
    } else {
      vocab[pieces[next++]] = id;
    }
  }
  SynthTokenizer t;
  t.tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Split"},
        {"pattern", {{"Regex", " ?[A-Za-z]+| ?[0-9]+| ?[^A-Za-z0-9 ]+| +"}}},
        {"behavior", "Isolated"},
        {"invert", false}}},
      {"post_processor", post_processor(specials, bos_id)},
      {"decoder", {{"type", "Fuse"}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
        {"ignore_merges", false}, {"vocab", vocab}, {"merges", merges}}}};
  json cfg = {{"tokenizer_class", "PreTrainedTokenizerFast"},
              {"model_max_length", model_max_length},
              {"clean_up_tokenization_spaces", false}};
  cfg["bos_token"] = bos_id ? json(specials.at(*bos_id)) : json(nullptr);
  cfg["eos_token"] = eos_ids.empty() ? json(nullptr) : json(specials.at(eos_ids[0]));
  t.tokenizer_config = std::move(cfg);
  return t;
}

}  // namespace llmport
