// Pipeline components not exercised by the shared golden files, checked on small inputs
// whose expected output follows from the reference semantics (huggingface/tokenizers:
// normalizer.rs split behaviours, metaspace.rs, digits.rs, added_vocabulary.rs,
// byte_fallback.rs, strip.rs, models/bpe/word.rs).
#include "tokenizer/added_vocabulary.hpp"
#include "tokenizer/components.hpp"
#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

using nlohmann::json;
using Pieces = std::vector<std::string>;

Pieces pre_tokenize(const json& cfg, const std::string& text, bool at_start = true) {
  auto pt = tok::make_pre_tokenizer(cfg, "test");
  std::vector<tok::PreToken> p{{text, at_start}};
  pt->pre_tokenize(p);
  Pieces out;
  for (auto& x : p) out.push_back(x.text);
  return out;
}

json split_cfg(const std::string& behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
}

TEST(TokenizerComponents, SplitBehaviours) {
  const std::string t = "a-b--c";
  EXPECT_EQ(pre_tokenize(split_cfg("Removed"), t), (Pieces{"a", "b", "c"}));
  EXPECT_EQ(pre_tokenize(split_cfg("Isolated"), t), (Pieces{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(pre_tokenize(split_cfg("MergedWithPrevious"), t), (Pieces{"a-", "b-", "-", "c"}));
  EXPECT_EQ(pre_tokenize(split_cfg("MergedWithNext"), t), (Pieces{"a", "-b", "-", "-c"}));
  EXPECT_EQ(pre_tokenize(split_cfg("Contiguous"), t), (Pieces{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(pre_tokenize(split_cfg("Removed", true), t), (Pieces{"-", "-", "-"}));
}

TEST(TokenizerComponents, SplitRegexIsUnicodeAware) {
  json cfg = {{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+"}}}, {"behavior", "Isolated"}, {"invert", false}};
  // "é" and "ж" are letters only with Unicode properties (PCRE2 UCP).
  EXPECT_EQ(pre_tokenize(cfg, "caf\xC3\xA9 \xD0\xB6!"), (Pieces{"caf\xC3\xA9", " ", "\xD0\xB6", "!"}));
}

// \s is Unicode White_Space as in Oniguruma (the reference's regex engine): NEL (U+0085)
// is whitespace, U+180E MONGOLIAN VOWEL SEPARATOR (a format character) is not.
TEST(TokenizerComponents, RegexWhitespaceIsUnicodeWhiteSpace) {
  json cfg = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Isolated"}, {"invert", false}};
  EXPECT_EQ(pre_tokenize(cfg, "a\xE1\xA0\x8E" "b c\xC2\x85" "d"),
            (Pieces{"a\xE1\xA0\x8E" "b", " ", "c", "\xC2\x85", "d"}));
  cfg["pattern"] = {{"Regex", "[^\\s]+"}};
  EXPECT_EQ(pre_tokenize(cfg, "a\xE1\xA0\x8E" "b\xE3\x80\x80" "c"),
            (Pieces{"a\xE1\xA0\x8E" "b", "\xE3\x80\x80", "c"}));
  cfg["pattern"] = {{"Regex", "\\S+"}};
  EXPECT_EQ(pre_tokenize(cfg, "x\xE1\xA0\x8E y"), (Pieces{"x\xE1\xA0\x8E", " ", "y"}));
}

TEST(TokenizerComponents, DigitsIndividualAndContiguous) {
  EXPECT_EQ(pre_tokenize({{"type", "Digits"}, {"individual_digits", true}}, "a123b"),
            (Pieces{"a", "1", "2", "3", "b"}));
  EXPECT_EQ(pre_tokenize({{"type", "Digits"}, {"individual_digits", false}}, "a123b"), (Pieces{"a", "123", "b"}));
}

TEST(TokenizerComponents, MetaspacePrependSchemes) {
  const std::string sp = "\xE2\x96\x81";
  json cfg = {{"type", "Metaspace"}, {"replacement", sp}, {"prepend_scheme", "always"}, {"split", true}};
  EXPECT_EQ(pre_tokenize(cfg, "hi yo"), (Pieces{sp + "hi", sp + "yo"}));
  cfg["prepend_scheme"] = "never";
  EXPECT_EQ(pre_tokenize(cfg, "hi yo"), (Pieces{"hi", sp + "yo"}));
  cfg["prepend_scheme"] = "first";
  EXPECT_EQ(pre_tokenize(cfg, "hi yo", true), (Pieces{sp + "hi", sp + "yo"}));
  EXPECT_EQ(pre_tokenize(cfg, "hi yo", false), (Pieces{"hi", sp + "yo"}));
  cfg["split"] = false;
  EXPECT_EQ(pre_tokenize(cfg, "hi yo", true), (Pieces{sp + "hi" + sp + "yo"}));
}

TEST(TokenizerComponents, ByteLevelPreTokenizerWithRegexAndPrefixSpace) {
  json cfg = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  // GPT-2 regex: " hello", " world", "!" ; space is "Ġ" (U+0120) in the byte alphabet.
  EXPECT_EQ(pre_tokenize(cfg, "hello world!"), (Pieces{"\xC4\xA0hello", "\xC4\xA0world", "!"}));
}

std::vector<std::string> decode_chain(const json& cfg, std::vector<std::string> tokens) {
  tok::make_decoder(cfg, "test")->decode_chain(tokens);
  return tokens;
}

TEST(TokenizerComponents, ByteFallbackDecoder) {
  json bf = {{"type", "ByteFallback"}};
  EXPECT_EQ(decode_chain(bf, {"<0xE2>", "<0x82>", "<0xAC>", "x"}), (Pieces{"\xE2\x82\xAC", "x"}));
  // An invalid run becomes one U+FFFD per byte.
  EXPECT_EQ(decode_chain(bf, {"<0xE2>", "<0x82>", "x"}), (Pieces{"\xEF\xBF\xBD", "\xEF\xBF\xBD", "x"}));
  EXPECT_EQ(decode_chain(bf, {"<0xZZ>"}), (Pieces{"<0xZZ>"}));
}

TEST(TokenizerComponents, StripAppliesPerToken) {
  json s = {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 1}};
  EXPECT_EQ(decode_chain(s, {"  a ", " b"}), (Pieces{" a", "b"}));
}

TEST(TokenizerComponents, MetaspaceDecoderDropsReplacementInFirstToken) {
  const std::string sp = "\xE2\x96\x81";
  json m = {{"type", "Metaspace"}, {"replacement", sp}, {"prepend_scheme", "always"}};
  EXPECT_EQ(decode_chain(m, {sp + "hi", sp + "yo"}), (Pieces{"hi", " yo"}));
  m["prepend_scheme"] = "never";
  EXPECT_EQ(decode_chain(m, {sp + "hi", sp + "yo"}), (Pieces{" hi", " yo"}));
}

TEST(TokenizerComponents, ByteLevelDecoderKeepsTokensOutsideAlphabet) {
  json bl = {{"type", "ByteLevel"}};
  // "Ġhi" maps to " hi"; "a b" holds a raw space (not in the byte alphabet): kept as is.
  EXPECT_EQ(decode_chain(bl, {"\xC4\xA0hi", "a b"}), (Pieces{" hia b"}));
  // Bytes of one character split over two tokens are joined before UTF-8 decoding.
  EXPECT_EQ(decode_chain(bl, {"\xC3\xA2\xC4\xA4", "\xC2\xAC"}), (Pieces{"\xE2\x82\xAC"}));  // "âĤ" "¬"
}

TEST(TokenizerComponents, ReplaceAndSequenceNormalizers) {
  json n = {{"type", "Sequence"},
            {"normalizers",
             {{{"type", "NFD"}}, {{"type", "StripAccents"}}, {{"type", "Lowercase"}},
              {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}}}}};
  std::string s = "\xC3\x89T\xC3\x89  ok";  // "ÉTÉ  ok"
  tok::make_normalizer(n, "test")->normalize(s);
  EXPECT_EQ(s, "ete ok");
  std::string e;
  tok::make_normalizer({{"type", "Prepend"}, {"prepend", "_"}}, "test")->normalize(e);
  EXPECT_EQ(e, "") << "Prepend leaves an empty string empty";
}

TEST(TokenizerComponents, TemplateProcessingStringForm) {
  json t = {{"type", "TemplateProcessing"},
            {"single", {"[CLS]", "$A", "[SEP]:0"}},
            {"special_tokens",
             {{"[CLS]", {{"id", "[CLS]"}, {"ids", {101}}, {"tokens", {"[CLS]"}}}},
              {"[SEP]", {{"id", "[SEP]"}, {"ids", {102}}, {"tokens", {"[SEP]"}}}}}}};
  std::vector<int> ids{7, 8};
  tok::make_post_processor(t, "test")->process(ids);
  EXPECT_EQ(ids, (std::vector<int>{101, 7, 8, 102}));
}

std::vector<tok::Segment> split_added(const std::vector<tok::AddedToken>& toks, const std::string& text,
                                      bool split_special = false) {
  tok::AddedVocabulary v;
  v.build(toks, nullptr);
  std::vector<tok::Segment> out;
  v.split(text, false, split_special, out);
  return out;
}

std::vector<std::string> render(const std::string& text, const std::vector<tok::Segment>& segs) {
  std::vector<std::string> out;
  for (const auto& s : segs)
    out.push_back((s.id >= 0 ? std::to_string(s.id) + ":" : "") + text.substr(s.b, s.e - s.b));
  return out;
}

TEST(TokenizerComponents, AddedTokenLstripRstrip) {
  tok::AddedToken m{"<m>", 100, true, true, true, false, false};
  std::string t = "x  <m>  y";
  EXPECT_EQ(render(t, split_added({m}, t)), (Pieces{"x", "100:  <m>  ", "y"}));
}

TEST(TokenizerComponents, AddedTokenSingleWord) {
  tok::AddedToken ab{"ab", 101, false, false, false, true, false};
  std::string t = "ab cab ab_ ab";
  EXPECT_EQ(render(t, split_added({ab}, t)), (Pieces{"101:ab", " cab ab_ ", "101:ab"}));
}

TEST(TokenizerComponents, AddedTokensLongestFirstAndNonOverlapping) {
  tok::AddedToken a{"<a>", 102, true}, ab{"<a><b>", 103, true};
  std::string t = "<a><b><a>";
  EXPECT_EQ(render(t, split_added({a, ab}, t)), (Pieces{"103:<a><b>", "102:<a>"}));
  // split_special: the special match is dropped but still consumed, so the non-special
  // "s>x" starting inside it is not found (Aho-Corasick non-overlapping iteration).
  tok::AddedToken s{"<s>", 104, true}, sx{"s>x", 105, false};
  std::string u = "<s>x";
  EXPECT_EQ(render(u, split_added({s, sx}, u, true)), (Pieces{"<s>x"}));
  EXPECT_EQ(render(u, split_added({s, sx}, u, false)), (Pieces{"104:<s>", "x"}));
}

// End to end on a small tokenizer.json: merges by rank, unk/fuse_unk, normalized added
// token matched on the normalized text.
json small_tokenizer(bool fuse_unk) {
  json vocab = {{"<unk>", 0}, {"a", 1}, {"b", 2}, {"c", 3}, {"ab", 4}, {"bc", 5}, {"abc", 6}, {"h", 7}, {"i", 8}};
  return {{"version", "1.0"},
          {"added_tokens",
           {{{"id", 9}, {"content", "HI"}, {"special", false}, {"normalized", true}, {"lstrip", false},
             {"rstrip", false}, {"single_word", false}}}},
          {"normalizer", {{"type", "Lowercase"}}},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", {{"type", "Fuse"}}},
          {"model",
           {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", fuse_unk}, {"byte_fallback", false},
            {"vocab", vocab}, {"merges", {"b c", "a b", "a bc"}}}}};
}

TEST(TokenizerComponents, SmallBpeEndToEnd) {
  TempDir d;
  write_file(d.path() / "tokenizer.json", small_tokenizer(true).dump());
  auto tok = Tokenizer::load(d.path());
  // "b c" has the best rank: a + bc, then "a bc" -> abc.
  EXPECT_EQ(tok->encode("abc"), (std::vector<int>{6}));
  EXPECT_EQ(tok->encode("ab"), (std::vector<int>{4}));
  // Unknown characters fuse into one <unk>.
  EXPECT_EQ(tok->encode("axyb"), (std::vector<int>{1, 0, 2}));
  // "Hi" lowercases to "hi", which is the normalized form of the added token "HI".
  EXPECT_EQ(tok->encode("aHib"), (std::vector<int>{1, 9, 2}));
  EXPECT_EQ(tok->decode({1, 9, 2}), "aHIb");
  write_file(d.path() / "tokenizer.json", small_tokenizer(false).dump());
  EXPECT_EQ(Tokenizer::load(d.path())->encode("axyb"), (std::vector<int>{1, 0, 0, 2}));
}

TEST(TokenizerComponents, NoUnkTokenDropsUnknownCharacters) {
  json j = small_tokenizer(true);
  j["model"]["unk_token"] = nullptr;
  TempDir d;
  write_file(d.path() / "tokenizer.json", j.dump());
  // x is dropped, so a and b become neighbours and merge ("a b").
  EXPECT_EQ(Tokenizer::load(d.path())->encode("axb"), (std::vector<int>{4}));
}

}  // namespace
}  // namespace llmport::test
