// Differential test against transformers' renderer: conversations no golden holds (random
// roles, turn counts, contents with Jinja delimiters, special-token text, think blocks, odd
// whitespace; fixed seed), rendered by Python's Jinja2 set up as transformers does
// (tests/chat/reference/render_chat.py, run as a child process) and by llmport, with every
// template and variable set of the shared chat entries. Where the reference raises (a
// template's raise_exception on roles out of order), llmport must raise too.
// (@huggingface/jinja, which rendered the goldens, is not the reference here: its strip,
// lstrip and rstrip ignore their characters argument, and its trim strips U+FEFF as
// JavaScript does; Qwen3's `content.lstrip('\n')` then drops leading spaces Python keeps.)
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>

#include "chat/chat_fixtures.hpp"
#include "llmport/chat_template.hpp"
#include "support/reference_process.hpp"
#include "support/random_text.hpp"

namespace llmport::test {
namespace {

// n conversations: half with a system message, 1-5 alternating user/assistant turns, a
// seventh with roles drawn at random (the templates' raise paths), the generation prompt
// on or off. Raw mt19937 words, as random_strings.
std::vector<ordered_json> random_conversations(unsigned seed, int n) {
  std::mt19937 rng(seed);
  const auto texts = random_strings(seed, 4 * n);
  std::size_t next_text = 0;
  auto text = [&] { return texts[next_text++ % texts.size()]; };
  static const char* const roles[] = {"system", "user", "assistant"};
  std::vector<ordered_json> out;
  for (int i = 0; i < n; ++i) {
    ordered_json messages = ordered_json::array();
    const bool irregular = rng() % 7 == 0;
    if (!irregular && rng() % 2 == 0) messages.push_back({{"role", "system"}, {"content", text()}});
    const int turns = 1 + static_cast<int>(rng() % 5);
    for (int t = 0; t < turns; ++t) {
      const char* role = irregular ? roles[rng() % 3] : (t % 2 == 0 ? "user" : "assistant");
      messages.push_back({{"role", role}, {"content", text()}});
    }
    out.push_back({{"messages", messages}, {"add_generation_prompt", rng() % 2 == 0}});
  }
  return out;
}

TEST(JinjaDifferential, RandomConversationsRenderAsTransformersJinja2) {
  const auto cases = chat_cases();
  ASSERT_FALSE(cases.empty()) << "no chat entries in tokenizers/*/golden.json under LLMPORT_SHARED";
  const std::string python = python_with("jinja2", "python3-jinja2");
  const std::string script = std::string(LLMPORT_SOURCE_DIR) + "/tests/chat/reference/render_chat.py";
  std::set<std::string> seen;  // one run per (template, variables)
  int total_raised = 0;
  unsigned seed = 11;
  for (const auto& c : cases) {
    const std::string tmpl = template_of(c);
    const ordered_json vars = vars_of(c);
    if (!seen.insert(tmpl + vars.dump()).second) continue;
    SCOPED_TRACE(c.name());
    const auto conversations = random_conversations(seed++, 40);
    TempDir t;
    {
      std::ofstream(t.path() / "template.jinja") << tmpl;
      std::ofstream in(t.path() / "cases.jsonl");
      for (auto conv : conversations) {
        conv["vars"] = vars;
        in << conv.dump() << "\n";
      }
    }
    const auto ref = run_reference({python, script, (t.path() / "template.jinja").string(),
                                    (t.path() / "cases.jsonl").string()});
    ASSERT_EQ(ref.size(), conversations.size());
    const ChatTemplate ours(tmpl);
    int raised = 0;
    for (std::size_t i = 0; i < conversations.size(); ++i) {
      const ordered_json want = ordered_json::parse(ref[i]);
      const auto& conv = conversations[i];
      SCOPED_TRACE("conversation " + std::to_string(i) + ": " + conv.dump());
      if (want.contains("error")) {
        ++raised;
        EXPECT_ANY_THROW(ours.render(conv.at("messages"), conv.at("add_generation_prompt").get<bool>(), vars))
            << "the reference raised: " << want.at("error");
        continue;
      }
      std::string got;
      EXPECT_NO_THROW(got = ours.render(conv.at("messages"), conv.at("add_generation_prompt").get<bool>(), vars));
      EXPECT_EQ(got, want.at("rendered").get<std::string>());
    }
    EXPECT_LT(raised, static_cast<int>(conversations.size()) / 2) << "most conversations must render";
    total_raised += raised;
  }
  EXPECT_GT(total_raised, 0) << "no conversation took a template's raise path";
}

}  // namespace
}  // namespace llmport::test
