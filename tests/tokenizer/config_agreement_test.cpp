// tokenizer_config.json beside tokenizer.json: transformers applies it on top (added tokens
// tokenizer.json lacks, named special tokens, explicit add_bos_token / add_eos_token), the
// Rust tokenizers library and llmport do not. Where they disagree the two readings encode
// the model differently: Tokenizer::config_disagreements() names each difference (verify
// caps on it), and the real shared tokenizers have none.
#include <tuple>

#include "llmport/error.hpp"
#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

using nlohmann::json;

// A byte-free BPE: "a", "b", "ab" plus <s> (0) and </s> (1) as special added tokens, and
// a TemplateProcessing that adds <s> (what add_bos_token true, add_eos_token false build).
json bpe_with_bos() {
  return {{"model", {{"type", "BPE"}, {"vocab", {{"<s>", 0}, {"</s>", 1}, {"a", 2}, {"b", 3}, {"ab", 4}}},
                     {"merges", {"a b"}}}},
          {"added_tokens",
           {{{"id", 0}, {"content", "<s>"}, {"special", true}}, {{"id", 1}, {"content", "</s>"}, {"special", true}}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair", json::array()},
            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}}}}}}};
}

json entry(const std::string& content, bool special) {
  return {{"content", content}, {"special", special}, {"lstrip", false}, {"rstrip", false},
          {"normalized", false}, {"single_word", false}};
}

json agreeing_config() {
  return {{"bos_token", "<s>"},
          {"eos_token", "</s>"},
          {"add_bos_token", true},
          {"add_eos_token", false},
          {"added_tokens_decoder", {{"0", entry("<s>", true)}, {"1", entry("</s>", true)}}}};
}

std::vector<std::string> disagreements(const json& config, const json& special_map = nullptr) {
  TempDir d;
  write_file(d.path() / "tokenizer.json", bpe_with_bos().dump());
  write_file(d.path() / "tokenizer_config.json", config.dump());
  if (!special_map.is_null()) write_file(d.path() / "special_tokens_map.json", special_map.dump());
  return Tokenizer::load(d.path())->config_disagreements();
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

TEST(TokenizerConfigAgreement, TheSharedTokenizersAndModelsAgree) {
  for (const std::string& name : golden_tokenizer_names()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(joined(cached_tokenizer(shared_path("tokenizers/" + name)).config_disagreements()), "");
  }
  EXPECT_EQ(joined(Tokenizer::load(stories_dir())->config_disagreements()), "");
  EXPECT_EQ(joined(disagreements(agreeing_config())), "");
}

TEST(TokenizerConfigAgreement, AnAddedTokenTokenizerJsonLacksIsNamed) {
  json c = agreeing_config();
  c["added_tokens_decoder"]["4"] = entry("ab", true);  // in the vocab, not an added token
  const auto d = disagreements(c);
  ASSERT_EQ(d.size(), 1U) << joined(d);
  EXPECT_NE(d[0].find("tokenizer_config.json: added_tokens_decoder 4 ('ab') is not an added token of tokenizer.json"),
            std::string::npos)
      << d[0];
}

TEST(TokenizerConfigAgreement, AnAddedTokenHeldOtherwiseIsNamed) {
  json c = agreeing_config();
  c["added_tokens_decoder"]["1"] = entry("<eos>", true);
  auto d = disagreements(c);
  ASSERT_EQ(d.size(), 1U) << joined(d);
  EXPECT_NE(d[0].find("added_tokens_decoder 1 ('<eos>') is '</s>' in tokenizer.json"), std::string::npos) << d[0];
  c = agreeing_config();
  c["added_tokens_decoder"]["1"] = entry("</s>", false);
  d = disagreements(c);
  ASSERT_EQ(d.size(), 1U) << joined(d);
  EXPECT_NE(d[0].find("added_tokens_decoder 1 ('</s>') is not special here, special in tokenizer.json"),
            std::string::npos)
      << d[0];
}

TEST(TokenizerConfigAgreement, ANamedSpecialTokenTokenizerJsonLacksIsNamed) {
  json c = agreeing_config();
  c["pad_token"] = "b";
  auto d = disagreements(c);
  ASSERT_EQ(d.size(), 1U) << joined(d);
  EXPECT_NE(d[0].find("tokenizer_config.json: pad_token 'b' is not an added token of tokenizer.json"),
            std::string::npos)
      << d[0];
  // From special_tokens_map.json when tokenizer_config.json does not say, named so.
  c = agreeing_config();
  d = disagreements(c, {{"additional_special_tokens", {"<x>"}}});
  ASSERT_EQ(d.size(), 1U) << joined(d);
  EXPECT_NE(d[0].find("special_tokens_map.json: additional_special_tokens '<x>' is not an added token"),
            std::string::npos)
      << d[0];
}

// special_tokens_map.json naming another bos_token than tokenizer_config.json: transformers
// v4 reads the map's (legacy files without added_tokens_decoder), llmport the config's, and
// the BOS of every prompt differs (adversarial round 8).
TEST(TokenizerConfigAgreement, TwoFilesNamingDifferentSpecialTokensAreNamed) {
  const auto d = disagreements(agreeing_config(), {{"bos_token", "</s>"}, {"eos_token", "</s>"}});
  ASSERT_EQ(d.size(), 1U) << joined(d);
  EXPECT_NE(d[0].find("special_tokens_map.json: bos_token '</s>' is not tokenizer_config.json's '<s>'"),
            std::string::npos)
      << d[0];
}

TEST(TokenizerConfigAgreement, AnAddFlagThePostProcessorDoesNotFollowIsNamed) {
  json c = agreeing_config();
  c["add_bos_token"] = false;
  auto d = disagreements(c);
  ASSERT_EQ(d.size(), 1U) << joined(d);
  EXPECT_NE(d[0].find("add_bos_token is false, but tokenizer.json's post_processor adds BOS ('<s>')"),
            std::string::npos)
      << d[0];
  c = agreeing_config();
  c["add_eos_token"] = true;
  d = disagreements(c);
  ASSERT_EQ(d.size(), 1U) << joined(d);
  EXPECT_NE(d[0].find("add_eos_token is true, but tokenizer.json's post_processor adds no EOS ('</s>')"),
            std::string::npos)
      << d[0];
  // Unstated flags are not compared (transformers v5 leaves the post-processor alone).
  c = agreeing_config();
  c.erase("add_bos_token");
  c.erase("add_eos_token");
  EXPECT_EQ(joined(disagreements(c)), "");
}

// Every way transformers names a special token (adversarial round 9): any "*_token" key
// (v5's model-specific image_token ...), extra_special_tokens as an object (v4.47) or a
// list, additional_special_tokens in special_tokens_map.json beside the config's own list.
TEST(TokenizerConfigAgreement, EveryNamedSpecialTokenIsHeldToTokenizerJson) {
  for (const auto& [config_extra, map, says] :
       std::vector<std::tuple<json, json, std::string>>{
           {{{"extra_special_tokens", {{"image_token", "ab"}}}}, nullptr, "extra_special_tokens 'ab'"},
           {{{"extra_special_tokens", {"ab"}}}, nullptr, "extra_special_tokens 'ab'"},
           {{{"image_token", "ab"}}, nullptr, "image_token 'ab'"},
           {{{"additional_special_tokens", json::array()}},
            {{"additional_special_tokens", {"ab"}}},
            "special_tokens_map.json: additional_special_tokens 'ab'"}}) {
    SCOPED_TRACE(config_extra.dump());
    json c = agreeing_config();
    c.update(config_extra);
    const auto d = disagreements(c, map);
    ASSERT_EQ(d.size(), 1U) << joined(d);
    EXPECT_NE(d[0].find(says + " is not an added token of tokenizer.json"), std::string::npos) << d[0];
  }
}

// added_tokens.json (the slow tokenizers' {"content": id}) is added by transformers v4.
TEST(TokenizerConfigAgreement, AnAddedTokensJsonEntryTokenizerJsonLacksIsNamed) {
  TempDir d;
  write_file(d.path() / "tokenizer.json", bpe_with_bos().dump());
  write_file(d.path() / "tokenizer_config.json", agreeing_config().dump());
  write_file(d.path() / "added_tokens.json", json{{"</s>", 1}}.dump());
  EXPECT_EQ(joined(Tokenizer::load(d.path())->config_disagreements()), "");
  write_file(d.path() / "added_tokens.json", json{{"ab", 4}}.dump());
  const auto dis = Tokenizer::load(d.path())->config_disagreements();
  ASSERT_EQ(dis.size(), 1U) << joined(dis);
  EXPECT_NE(dis[0].find("added_tokens.json: 'ab' (4) is not an added token of tokenizer.json"), std::string::npos)
      << dis[0];
  write_file(d.path() / "added_tokens.json", "[1]");
  EXPECT_THROW(Tokenizer::load(d.path()), ConfigError);
}

// transformers reads the flags by Python truth: "false" and 1 add the EOS.
TEST(TokenizerConfigAgreement, AddFlagsAreReadByPythonTruth) {
  for (const json& v : {json("false"), json(1), json(0.5)}) {
    SCOPED_TRACE(v.dump());
    json c = agreeing_config();
    c["add_eos_token"] = v;
    const auto d = disagreements(c);
    ASSERT_EQ(d.size(), 1U) << joined(d);
    EXPECT_NE(d[0].find("add_eos_token is true, but tokenizer.json's post_processor adds no EOS"), std::string::npos)
        << d[0];
  }
  for (const json& v : {json(nullptr), json(0), json("")}) {
    json c = agreeing_config();
    c["add_eos_token"] = v;
    EXPECT_EQ(joined(disagreements(c)), "") << v.dump();
  }
}

// An entry's whitespace and word flags: transformers re-adds it, so lstrip/rstrip apply.
TEST(TokenizerConfigAgreement, AnAddedTokensFlagsAreCompared) {
  json c = agreeing_config();
  c["added_tokens_decoder"]["1"]["lstrip"] = true;
  const auto d = disagreements(c);
  ASSERT_EQ(d.size(), 1U) << joined(d);
  EXPECT_NE(d[0].find("added_tokens_decoder 1 ('</s>') has lstrip true here, false in tokenizer.json"),
            std::string::npos)
      << d[0];
}

TEST(TokenizerConfigAgreement, AMalformedAddedTokensDecoderIsNamed) {
  for (const json& bad : {json{{"x1", entry("a", false)}}, json{{"5", "a"}}, json{{"5", {{"special", true}}}},
                          json::array()}) {
    SCOPED_TRACE(bad.dump());
    json c = agreeing_config();
    c["added_tokens_decoder"] = bad;
    try {
      disagreements(c);
      ADD_FAILURE() << "loaded";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("tokenizer_config.json: field 'added_tokens_decoder"), std::string::npos)
          << e.what();
    }
  }
}

TEST(TokenizerConfigAgreement, SpecialIdsOfAModelWithoutTokenizerJson) {
  TempDir d;
  EXPECT_TRUE(tokenizer_config_special_ids(d.path()).empty());
  json c = agreeing_config();
  c["added_tokens_decoder"]["7"] = entry("<pad>", false);
  write_file(d.path() / "tokenizer_config.json", c.dump());
  EXPECT_EQ(tokenizer_config_special_ids(d.path()), (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace llmport::test
