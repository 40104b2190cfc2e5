// `llmport run --chat` driven through a pseudo-terminal (forkpty): two turns, each answer
// arriving before the next message is typed (streamed, not buffered to exit), history
// carried (turn 2 answers the whole rendered conversation), /reset forgets it, Ctrl-D
// leaves with exit 0. Expected answers come from the library: greedy generate() on the
// template-rendered ids with the reference backend. The model is a tiny random-weight
// synth model carrying the shared Qwen3 tokenizer and its chat template.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <nlohmann/json.hpp>

#include "llmport/chat_template.hpp"
#include "llmport/engine.hpp"
#include "llmport/generate.hpp"
#include "llmport/model_config.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/weights.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

constexpr int kTokens = 10;

/// Greedy answer to `messages` as the chat should produce it.
std::string reference_answer(const fs::path& dir, const ordered_json& messages) {
  auto tok = llmport::Tokenizer::load(dir);
  ordered_json vars = ordered_json::object();
  if (!tok->bos_token().empty()) vars["bos_token"] = tok->bos_token();
  if (!tok->eos_token().empty()) vars["eos_token"] = tok->eos_token();
  std::string text = llmport::ChatTemplate(tok->chat_template()).render(messages, true, vars);
  llmport::EncodeOptions eo;
  eo.add_special_tokens = false;
  std::vector<int> ids = tok->encode(text, eo);
  auto cfg = llmport::load_model_config(dir);
  auto weights = llmport::WeightStore::open(dir, cfg);
  llmport::EngineOptions opt;
  opt.backend = "reference";
  llmport::Engine engine(cfg, weights, opt);
  llmport::GenerateOptions g;
  g.n_tokens = kTokens;
  g.stop_ids = cfg.stop_ids();
  if (auto eos = tok->token_to_id(tok->eos_token())) g.stop_ids.push_back(*eos);
  auto r = llmport::generate(engine, ids, g);
  return tok->decode(r.generated_ids, true);
}

ordered_json msg(const char* role, const std::string& content) { return {{"role", role}, {"content", content}}; }

/// A child process on a pseudo-terminal (echo and output newline translation off).
class PtyProcess {
 public:
  explicit PtyProcess(const std::vector<std::string>& args) {
    pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ < 0) throw std::runtime_error("forkpty failed");
    if (pid_ == 0) {
      termios t{};
      tcgetattr(STDIN_FILENO, &t);
      t.c_lflag &= ~static_cast<tcflag_t>(ECHO);
      t.c_oflag &= ~static_cast<tcflag_t>(ONLCR);
      tcsetattr(STDIN_FILENO, TCSANOW, &t);
      std::vector<std::string> copy = args;
      std::vector<char*> argv;
      std::string bin = LLMPORT_BIN;
      argv.push_back(bin.data());
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(bin.c_str(), argv.data());
      _exit(127);
    }
  }
  ~PtyProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }

  void write_line(const std::string& s) {
    std::string line = s + "\n";
    ASSERT_EQ(write(master_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }
  void send_eof() {
    char eot = 4;  // Ctrl-D at the start of a line: EOF for the child's stdin
    ASSERT_EQ(write(master_, &eot, 1), 1);
  }

  /// Reads until the accumulated output ends with `suffix` or `timeout_s` passes; returns
  /// what was read since the last call.
  std::string read_until(const std::string& suffix, int timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    std::string got;
    while (got.size() < suffix.size() || got.compare(got.size() - suffix.size(), suffix.size(), suffix) != 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[4096];
      ssize_t n = read(master_, buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
    }
    return got;
  }

  int wait_exit(int timeout_s) {
    for (int i = 0; i < timeout_s * 20; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      char buf[256];
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, 0) > 0) (void)!read(master_, buf, sizeof buf);  // keep the pty drained
      usleep(50 * 1000);
    }
    return -2;
  }

 private:
  int master_ = -1;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace

TEST(RunChat, TwoTurnsThroughAPseudoTerminal) {
  llmport::test::TempDir tmp;
  fs::path model = tmp.path() / "tiny-qwen3-chat";
  auto s = llmport::test::run_llmport({"synth", "--preset", "tiny-qwen3", "--out", model.string(), "--tokenizer",
                                       llmport::test::shared_path("tokenizers/qwen3").string()});
  ASSERT_EQ(s.exit_code, 0) << s.err;

  const std::string u1 = "Hello! Who are you?", u2 = "Tell me a joke about C++.";
  const std::string a1 = reference_answer(model, ordered_json::array({msg("user", u1)}));
  const std::string a2 = reference_answer(model, ordered_json::array({msg("user", u1), msg("assistant", a1), msg("user", u2)}));
  const std::string a2_fresh = reference_answer(model, ordered_json::array({msg("user", u2)}));
  ASSERT_FALSE(a1.empty());

  PtyProcess p({"run", model.string(), "--chat", "-n", std::to_string(kTokens), "--backend", "reference"});
  EXPECT_EQ(p.read_until("> ", 60), "> ");  // a terminal gets a prompt marker
  p.write_line(u1);
  // Turn 1's answer arrives while the chat waits for more input: it is streamed out, not
  // held until stdin closes.
  EXPECT_EQ(p.read_until(a1 + "\n> ", 60), a1 + "\n> ");
  p.write_line(u2);
  // Turn 2 sees turn 1 (user + assistant) through the template: history carried.
  EXPECT_EQ(p.read_until(a2 + "\n> ", 60), a2 + "\n> ");
  p.write_line("/reset");
  EXPECT_EQ(p.read_until("(conversation reset)\n> ", 30), "(conversation reset)\n> ");
  p.write_line(u2);
  EXPECT_EQ(p.read_until(a2_fresh + "\n> ", 60), a2_fresh + "\n> ");
  p.send_eof();
  EXPECT_EQ(p.wait_exit(30), 0);
}

TEST(RunChat, PipedStdinAndInstructPrompt) {
  llmport::test::TempDir tmp;
  fs::path model = tmp.path() / "tiny-qwen3-chat";
  auto s = llmport::test::run_llmport({"synth", "--preset", "tiny-qwen3", "--out", model.string(), "--tokenizer",
                                       llmport::test::shared_path("tokenizers/qwen3").string()});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const std::string sys = "You are terse.", u1 = "Hi", u2 = "Bye";
  ordered_json conv = ordered_json::array({msg("system", sys), msg("user", u1)});
  const std::string a1 = reference_answer(model, conv);
  conv.push_back(msg("assistant", a1));
  conv.push_back(msg("user", u2));
  const std::string a2 = reference_answer(model, conv);

  // Piped stdin: no prompt marker, one answer line per message, exit at EOF.
  auto r = llmport::test::run_llmport({"run", model.string(), "--chat", "--system", sys, "-n", std::to_string(kTokens),
                                       "--backend", "reference"},
                                      u1 + "\n" + u2 + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, a1 + "\n" + a2 + "\n");

  // --prompt on an instruct model is rendered through the template; the answer alone prints.
  r = llmport::test::run_llmport({"run", model.string(), "--prompt", u1, "--system", sys, "-n", std::to_string(kTokens),
                                  "--backend", "reference"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, a1 + "\n");

  // --raw feeds the text as is (add_special_tokens=true) and echoes it.
  r = llmport::test::run_llmport({"run", model.string(), "--prompt", u1, "--raw", "-n", "3", "--backend", "reference", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto tok = llmport::Tokenizer::load(model);
  EXPECT_EQ(nlohmann::json::parse(r.out)["prompt_ids"].get<std::vector<int>>(), tok->encode(u1));

  // Flags that contradict each other are usage errors.
  EXPECT_EQ(llmport::test::run_llmport({"run", model.string(), "--chat", "--prompt", "x"}).exit_code, 2);
  EXPECT_EQ(llmport::test::run_llmport({"run", model.string(), "--prompt", "x", "--raw", "--system", "s"}).exit_code, 2);
}

TEST(RunChat, ModelWithoutTemplateRefusesChat) {
  fs::path stories = llmport::test::shared_path("models/stories260K");
  auto r = llmport::test::run_llmport({"run", stories.string(), "--chat"}, "hello\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("chat_template"), std::string::npos) << r.err;
}

TEST(RunChat, HistoryStaysWithinTheContext) {
  // With a 48-token context the conversation cannot keep every turn: the oldest turns are
  // dropped and every message still gets an answer; a message that alone exceeds the
  // context is reported on stderr and the chat goes on.
  llmport::test::TempDir tmp;
  fs::path model = tmp.path() / "tiny-qwen3-chat";
  auto s = llmport::test::run_llmport({"synth", "--preset", "tiny-qwen3", "--out", model.string(), "--tokenizer",
                                       llmport::test::shared_path("tokenizers/qwen3").string()});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  std::string long_msg;
  for (int i = 0; i < 60; ++i) long_msg += "word ";
  std::string input = "one\ntwo\n" + long_msg + "\nthree\nfour\nfive\n";
  auto r = llmport::test::run_llmport(
      {"run", model.string(), "--chat", "-n", "8", "--max-seq", "48", "--backend", "reference", "--ignore-eos"}, input);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Only the long message is refused: the later ones fit once old turns are dropped.
  const std::string refused = "no room left in the context of 48 tokens";
  std::size_t first = r.err.find(refused);
  EXPECT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(refused, first + 1), std::string::npos) << r.err;
  // --ignore-eos: every answer is 8 tokens; 5 answered messages -> 5 answer lines at least
  // (an answer may itself contain newlines).
  EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 5) << r.out;
}
