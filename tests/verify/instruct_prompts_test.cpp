// verify on an instruct model (its tokenizer has a chat template) uses the instruct
// prompt set rendered through the chat template, and the reports say so.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmport/chat_template.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/verify.hpp"
#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using llmport::test::read_file;
using llmport::test::run_llmport;
using llmport::test::shared_path;
using llmport::test::TempDir;
using nlohmann::json;

TEST(VerifyInstruct, InstructSetRenderedWithTheChatTemplate) {
  TempDir tmp;
  const fs::path model = tmp.path() / "tiny-qwen3-instruct";
  auto s = run_llmport({"synth", "--preset", "tiny-qwen3", "--out", model.string(), "--seed", "1", "--tokenizer",
                        shared_path("tokenizers/qwen3").string()});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const fs::path rd = tmp.path() / "report";
  // In-process with 4 steps: the 151k-token vocabulary makes the fp32 oracle slow, and the
  // prompt set does not depend on the step count.
  llmport::VerifyOptions opt;
  opt.reference = "oracle";
  opt.engine.threads = 1;
  opt.n_steps = 4;
  opt.quick = true;
  opt.report_dir = rd;
  const llmport::VerifyResult r = llmport::run_verify(model, opt);
  EXPECT_TRUE(r.pass) << (r.failures.empty() ? "" : r.failures.front());
  const json rep = json::parse(read_file(rd / "report.json"));
  EXPECT_EQ(rep["prompt_set"]["name"], "instruct");
  EXPECT_EQ(rep["prompt_set"]["rendering"], "chat_template");
  EXPECT_EQ(rep["prompt_set"]["description"], "instruct prompts, rendered with the chat template");
  EXPECT_NE(read_file(rd / "report.md").find("instruct prompts, rendered with the chat template"), std::string::npos);

  // The ids are the template's rendering of each instruct prompt as one user turn.
  auto tok = llmport::Tokenizer::load(model);
  const auto im_start = tok->token_to_id("<|im_start|>");
  ASSERT_TRUE(im_start.has_value());
  const auto set = llmport::read_prompt_file(llmport::prompt_set_dir() / "instruct.json");
  ASSERT_EQ(rep["prompts"].size(), static_cast<std::size_t>(llmport::kQuickPrompts));
  for (std::size_t i = 0; i < rep["prompts"].size(); ++i) {
    const auto ids = rep["prompts"][i]["prompt_ids"].get<std::vector<int>>();
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), *im_start);
    EXPECT_EQ(ids, llmport::instruct_prompt_ids(*tok, "", *set[i].text)) << set[i].name;
    EXPECT_NE(ids, tok->encode(*set[i].text)) << "raw text encoding, not the template";
  }
}

}  // namespace
