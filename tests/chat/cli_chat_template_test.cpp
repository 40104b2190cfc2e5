// `llmport chat-template` on every shared tokenizer folder with chat goldens: the printed
// text is exactly `rendered` (no newline added) and --ids prints exactly `ids`; bos/eos come
// from the tokenizer, extra variables from --var, a .jinja template from --template.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using llmport::test::run_llmport;

namespace {

struct Entry {
  fs::path dir;
  ordered_json chat;
};

std::vector<Entry> entries() {
  std::vector<Entry> out;
  for (const auto& d : fs::directory_iterator(llmport::test::shared_path("tokenizers"))) {
    fs::path g = d.path() / "golden.json";
    if (!fs::exists(g)) continue;
    auto golden = ordered_json::parse(llmport::test::read_file(g));
    if (golden.contains("chat"))
      for (const auto& c : golden["chat"]) out.push_back({d.path(), c});
  }
  return out;
}

std::vector<std::string> args_for(const Entry& e, const fs::path& messages) {
  std::vector<std::string> args{"chat-template", e.dir.string(), "--messages", messages.string()};
  if (e.chat.at("add_generation_prompt").get<bool>()) args.push_back("--add-generation-prompt");
  for (auto it = e.chat["extra_vars"].begin(); it != e.chat["extra_vars"].end(); ++it)
    args.push_back("--var=" + it.key() + "=" + it.value().dump());
  std::string tmpl = e.chat.at("template").get<std::string>();
  if (tmpl != "tokenizer_config.json") {
    args.push_back("--template");
    args.push_back((e.dir / tmpl).string());
  }
  return args;
}

}  // namespace

TEST(ChatTemplateCli, PrintsRenderedAndIds) {
  auto all = entries();
  ASSERT_FALSE(all.empty());
  // The library test covers every entry; here one entry per (folder, template, has --var)
  // keeps the suite fast (each run loads the tokenizer) while covering each CLI path.
  std::set<std::string> seen;
  llmport::test::TempDir tmp;
  for (const auto& e : all) {
    std::string kind = e.dir.string() + "|" + e.chat.at("template").get<std::string>() + "|" +
                       std::to_string(e.chat["extra_vars"].size());
    if (!seen.insert(kind).second) continue;
    SCOPED_TRACE(e.dir.filename().string() + "/" + e.chat.value("id", ""));
    fs::path msgs = tmp.path() / "messages.json";
    llmport::test::write_file(msgs, e.chat.at("messages").dump());
    auto args = args_for(e, msgs);
    auto r = run_llmport(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, e.chat.at("rendered").get<std::string>());
    args.push_back("--ids");
    r = run_llmport(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ordered_json::parse(r.out), e.chat.at("ids"));
  }
}

TEST(ChatTemplateCli, MessagesFromStdin) {
  auto all = entries();
  ASSERT_FALSE(all.empty());
  const auto& e = all.front();
  auto args = args_for(e, "-");
  auto r = run_llmport(args, e.chat.at("messages").dump());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, e.chat.at("rendered").get<std::string>());
}

TEST(ChatTemplateCli, BadInputExitsTwoWithOneLine) {
  auto all = entries();
  ASSERT_FALSE(all.empty());
  llmport::test::TempDir tmp;
  std::string dir = all.front().dir.string();
  fs::path bad = tmp.path() / "bad.json";
  llmport::test::write_file(bad, "{\"role\": \"user\"}");
  auto r = run_llmport({"chat-template", dir, "--messages", bad.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("JSON array"), std::string::npos) << r.err;

  // serve's rule: content is required but for an assistant turn.
  llmport::test::write_file(bad, R"([{"role": "system", "content": "s"}, {"role": "user"}])");
  r = run_llmport({"chat-template", dir, "--messages", bad.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("message 1 has no content"), std::string::npos) << r.err;

  fs::path ok = tmp.path() / "ok.json";
  llmport::test::write_file(ok, R"([{"role": "user", "content": "hi"}])");
  r = run_llmport({"chat-template", dir, "--messages", ok.string(), "--var", "novalue"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("NAME=JSON"), std::string::npos) << r.err;

  fs::path tmpl = tmp.path() / "t.jinja";
  llmport::test::write_file(tmpl, "ok\n{{ messages | xmlattr }}");
  r = run_llmport({"chat-template", dir, "--messages", ok.string(), "--template", tmpl.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("xmlattr"), std::string::npos) << r.err;

  // A model without a chat template (llama2 has none) says so.
  fs::path llama2 = llmport::test::shared_path("tokenizers/llama2");
  r = run_llmport({"chat-template", llama2.string(), "--messages", ok.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("chat_template"), std::string::npos) << r.err;
}

TEST(ChatTemplateCli, RaiseExceptionReachesTheUser) {
  // Gemma's template raises on roles that do not alternate.
  fs::path gemma = llmport::test::shared_path("tokenizers/gemma3");
  llmport::test::TempDir tmp;
  fs::path msgs = tmp.path() / "m.json";
  llmport::test::write_file(msgs, R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
  auto r = run_llmport({"chat-template", gemma.string(), "--messages", msgs.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Conversation roles must alternate"), std::string::npos) << r.err;
}
