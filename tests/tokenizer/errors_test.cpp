// Malformed tokenizer files and bad input give one typed, one-line error naming the file
// and the component or field at fault; never a crash.
#include <chrono>
#include <string>
#include <vector>

#include "llmport/error.hpp"
#include "tokenizer/regex.hpp"
#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

using nlohmann::json;

json minimal() {
  return {{"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}}};
}

// Loads `text` as tokenizer.json and returns the ConfigError message ("" if none thrown).
std::string load_error(const std::string& text) {
  TempDir d;
  write_file(d.path() / "tokenizer.json", text);
  try {
    Tokenizer::load(d.path());
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "multi-line error: " << msg;
    EXPECT_NE(msg.find("tokenizer.json"), std::string::npos) << "error does not name the file: " << msg;
    return msg;
  }
  return "";
}

TEST(TokenizerErrors, MinimalFileLoads) {
  EXPECT_EQ(load_error(minimal().dump()), "");
}

TEST(TokenizerErrors, BadJson) {
  std::string msg = load_error("{\"model\": {\"type\": \"BPE\", ");
  EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
  EXPECT_NE(load_error("").find("malformed JSON"), std::string::npos);
  // In llmport's words (file_io's json_error_text), not nlohmann's exception text.
  EXPECT_NE(msg.find("syntax error at line 1, column "), std::string::npos) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
}

TEST(TokenizerErrors, TruncatedRealFile) {
  std::string text = read_file(shared_path("tokenizers/llama2/tokenizer.json"));
  EXPECT_NE(load_error(text.substr(0, text.size() / 2)).find("malformed JSON"), std::string::npos);
}

TEST(TokenizerErrors, MergeNamingUnknownToken) {
  json j = minimal();
  j["model"]["merges"] = {"a b", "a zz"};
  std::string msg = load_error(j.dump());
  EXPECT_NE(msg.find("merge #1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'zz'"), std::string::npos) << msg;
  j["model"]["merges"] = json::array({json::array({"a", "q"})});
  EXPECT_NE(load_error(j.dump()).find("'q'"), std::string::npos);
  j["model"]["merges"] = {"ab"};
  EXPECT_NE(load_error(j.dump()).find("merge #0"), std::string::npos);
}

TEST(TokenizerErrors, UnknownComponentsAreNamed) {
  for (const char* field : {"normalizer", "pre_tokenizer", "post_processor", "decoder"}) {
    json j = minimal();
    j[field] = {{"type", "FancyThing"}};
    std::string msg = load_error(j.dump());
    EXPECT_NE(msg.find("FancyThing"), std::string::npos) << field << ": " << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
  }
  json j = minimal();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "Nope"}}}}};
  EXPECT_NE(load_error(j.dump()).find("'Nope'"), std::string::npos);
  j = minimal();
  j["model"]["type"] = "Unigram";
  EXPECT_NE(load_error(j.dump()).find("Unigram"), std::string::npos);
}

TEST(TokenizerErrors, MalformedFields) {
  json j = minimal();
  j["model"]["vocab"]["c"] = "three";
  EXPECT_NE(load_error(j.dump()).find("model.vocab['c']"), std::string::npos);
  j = minimal();
  j.erase("model");
  EXPECT_NE(load_error(j.dump()).find("'model'"), std::string::npos);
  j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  EXPECT_NE(load_error(j.dump()).find("bad regex"), std::string::npos);
  j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
  EXPECT_NE(load_error(j.dump()).find("Sideways"), std::string::npos);
  j = minimal();
  j["added_tokens"] = {{{"content", "<x>"}}};
  EXPECT_NE(load_error(j.dump()).find("added_tokens"), std::string::npos);
  EXPECT_NE(load_error("[1, 2]").find("object"), std::string::npos);
}

TEST(TokenizerErrors, MissingTokenizerJson) {
  TempDir d;
  EXPECT_FALSE(Tokenizer::exists(d.path()));
  write_file(d.path() / "config.json", "{}");
  EXPECT_THROW(Tokenizer::load(d.path() / "config.json"), ConfigError);
  EXPECT_THROW(Tokenizer::load(d.path()), ConfigError);
  EXPECT_THROW(Tokenizer::load(d.path() / "nope"), ConfigError);
}

TEST(TokenizerErrors, BadTokenizerConfigJson) {
  TempDir d;
  write_file(d.path() / "tokenizer.json", minimal().dump());
  write_file(d.path() / "tokenizer_config.json", "{ not json");
  try {
    Tokenizer::load(d.path());
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json"), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, InvalidUtf8InputAndOutOfRangeId) {
  TempDir d;
  write_file(d.path() / "tokenizer.json", minimal().dump());
  auto tok = Tokenizer::load(d.path());
  EXPECT_THROW(tok->encode("a\xFF"), UsageError);
  EXPECT_THROW(tok->encode("a\xE2\x82"), UsageError);
  EXPECT_THROW(tok->id_to_token(3), UsageError);
  EXPECT_THROW(tok->id_to_token(-1), UsageError);
  // decode skips ids without a token, as the reference does (e.g. padded embedding rows).
  EXPECT_EQ(tok->decode({0, 99, 1}), "a b");
}

}  // namespace
}  // namespace llmport::test

namespace llmport {
namespace {

// PCRE2's match limit bounds one match; a pattern that re-scans the rest of the text at
// every match ((?:[\s\S]*\x01)? finds no \x01 and backtracks over all of it) is quadratic in
// the text: minutes at 1 MB, a hang for `perplexity -f`. The whole find_all is bounded in
// time (here a budget of 50 ms + 0.1 us a byte), refused naming the file and pattern.
TEST(TokenizerErrors, AQuadraticRegexIsStoppedByItsTimeBudget) {
  const tok::Regex quadratic(R"((?:[\s\S]*\x01)?a)", "tokenizer.json: pre_tokenizer");
  const std::string text(400000, 'a');  // ~8e10 steps in all: hours without the bound
  try {
    quadratic.find_all(text, 0.05, 1e-7);
    ADD_FAILURE() << "ran to the end";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("tokenizer.json: pre_tokenizer: pre-tokenizer regex '(?:[\\s\\S]*\\x01)?a' ran past"),
              std::string::npos) << m;
    EXPECT_NE(m.find("on a text of 400000 bytes"), std::string::npos) << m;
  }
  // A linear pattern over the same text: every match, within the default budget.
  const tok::Regex linear("a", "tokenizer.json: pre_tokenizer");
  EXPECT_EQ(linear.find_all(text).size(), text.size());
}

TEST(TokenizerErrors, APatternThatBacktracksAtEveryPositionWithoutMatchingIsStoppedToo) {
  // ~20 ms of backtracking at each start position (under PCRE2's match limit) and no match
  // anywhere: one unbounded search over these 3 KB ran for a minute before the clock was read.
  const tok::Regex redos("(?:a|aa){1,22}c", "tokenizer.json: pre_tokenizer");
  const std::string text = std::string(3000, 'a') + "bc";
  const auto t0 = std::chrono::steady_clock::now();
  try {
    redos.find_all(text, 0.05, 1e-7);
    ADD_FAILURE() << "ran to the end";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("ran past"), std::string::npos) << e.what();
  }
  // The budget is overrun by at most kStartsPerCall positions' work (~0.3 s here).
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST(TokenizerErrors, SearchingInWindowsOfStartPositionsFindsWhatOneSearchFinds) {
  // Matches far apart (past several windows, at every phase of a window), multibyte
  // characters across a window's edge, a lookbehind reaching back before the window, and
  // empty matches.
  std::string text;
  std::vector<std::size_t> y_at, e_at;
  for (std::size_t i = 0; i < 48; ++i) {
    text += std::string(37 + i % 17, 'x');
    e_at.push_back(text.size());
    text += "\xc3\xa9\xe2\x82\xac";  // U+00E9 U+20AC
    y_at.push_back(text.size());
    text += "yz";
  }
  const tok::Regex after_euro("(?<=\\x{20AC})y", "t");
  const auto m = after_euro.find_all(text);
  ASSERT_EQ(m.size(), y_at.size());
  for (std::size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m[i].first, y_at[i]);
    EXPECT_EQ(m[i].second, y_at[i] + 1);
  }
  const tok::Regex before_e_acute("(?=\\x{E9})", "t");
  const auto e = before_e_acute.find_all(text);
  ASSERT_EQ(e.size(), e_at.size());
  for (std::size_t i = 0; i < e.size(); ++i) {
    EXPECT_EQ(e[i].first, e_at[i]);
    EXPECT_EQ(e[i].second, e_at[i]);
  }
}

}  // namespace
}  // namespace llmport
