// The deployment Makefile passes PROMPT to llmport byte for byte: make must not expand
// `$(x)` or `$HOME` in it (the ids and text equal a direct `llmport run`).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "deploy/docs_writer.hpp"
#include "deploy/manifest.hpp"
#include "deploy/workspace.hpp"
#include "support/test_support.hpp"

namespace llmport::deploy {
namespace {
namespace fs = std::filesystem;
using llmport::test::read_file;
using llmport::test::run_llmport;
using llmport::test::shared_path;
using llmport::test::TempDir;

TEST(MakefilePrompt, DollarSignsReachLlmportUnchanged) {
  TempDir t;
  Workspace ws(t.path() / "dep");
  ws.create_dirs();
  Manifest m;
  m.name = "dep";
  m.target = "cpu";
  m.dtype = "fp32";
  m.threads = 1;
  m.has_tokenizer = true;
  m.model_dir = fs::absolute(shared_path("models/stories260K"));
  for (auto& p : m.phases) p.status = PhaseStatus::Pass;  // deployed (else run warns it has not passed)
  m.save(ws.manifest());  // make run passes --deployment: a deployment has its deployment.json
  write_makefile(ws, m);

  for (const std::string prompt : {"Lily said $(x) and $HOME", "a $$ b ${PATH} c"}) {
    SCOPED_TRACE(prompt);
    const fs::path out = t.path() / "make_out.json";
    // N_TOKENS lands unquoted after --n-tokens, so it can carry --json too.
    const std::string cmd = "make -s -C '" + ws.dir().string() + "' run LLMPORT='" + LLMPORT_BIN +
                            "' PROMPT='" + prompt + "' N_TOKENS='4 --json' > '" + out.string() + "' 2> '" +
                            (t.path() / "make_err.txt").string() + "'";
    const int rc = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(rc));
    ASSERT_EQ(WEXITSTATUS(rc), 0) << read_file(out) << read_file(t.path() / "make_err.txt");
    // The deployed model, unchanged, every phase passed: no warning about it.
    EXPECT_EQ(read_file(t.path() / "make_err.txt").find("warning: deployment"), std::string::npos);
    const auto via_make = nlohmann::json::parse(read_file(out));

    const auto direct = run_llmport({"run", m.model_dir.string(), "--backend", "cpu", "--dtype", "fp32", "--threads",
                                     "1", "--registry", (ws.dir() / "registry").string(), "--temperature", "0",
                                     "--n-tokens", "4", "--json", "--prompt", prompt});
    ASSERT_EQ(direct.exit_code, 0) << direct.err;
    const auto d = nlohmann::json::parse(direct.out);
    EXPECT_EQ(via_make.at("prompt_ids"), d.at("prompt_ids"));
    EXPECT_EQ(via_make.at("generated_ids"), d.at("generated_ids"));
    EXPECT_EQ(via_make.at("text"), d.at("text"));
  }
}

}  // namespace
}  // namespace llmport::deploy
