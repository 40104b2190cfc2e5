// docs/serving.md's nginx configuration, exercised: Debian's nginx on loopback (an
// unprivileged config in a temp dir: own pid, logs and temp paths, `daemon off`) in front of
// two stories260K replicas of `llmport serve`. Requests through nginx get the golden greedy
// answers from both replicas; one replica is SIGKILLed mid-run and every request still
// succeeds (on the other; A dies while generating, and without the config's
// `non_idempotent` retry those requests would be 502s). Fails, not skips, without nginx.
#include <future>

#include "serve/serve_test_util.hpp"

namespace llmport::test {
namespace {

using json = nlohmann::json;

std::string find_nginx() {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/usr/local/sbin:/sbin";  // root's PATH has these; a user's often not
  std::size_t pos = 0;
  while (pos <= path.size()) {
    const auto end = std::min(path.find(':', pos), path.size());
    const std::filesystem::path p = std::filesystem::path(path.substr(pos, end - pos)) / "nginx";
    if (!p.parent_path().empty() && access(p.c_str(), X_OK) == 0) return p.string();
    pos = end + 1;
  }
  return "";
}

// The ```nginx block of docs/serving.md.
std::string documented_config() {
  const std::string doc = read_file(std::filesystem::path(LLMPORT_SOURCE_DIR) / "docs/serving.md");
  const auto begin = doc.find("```nginx\n");
  if (begin == std::string::npos) return "";
  const auto end = doc.find("```", begin + 9);
  return doc.substr(begin + 9, end - begin - 9);
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// Count of 200 answers to /v1/completions in a replica's /metrics.
double completions_ok(const ServerProcess& s) {
  const std::string m = curl("GET", s.url("/metrics")).body;
  const std::string key = "llmport_requests_total{endpoint=\"/v1/completions\",status=\"200\"} ";
  const auto p = m.find(key);
  return p == std::string::npos ? 0 : std::atof(m.c_str() + p + key.size());
}

class Nginx {
 public:
  Nginx(const std::string& bin, const std::filesystem::path& dir) : dir_(dir) {
    const std::string conf = (dir / "nginx.conf").string(), err = (dir / "error.log").string();
    pid_ = fork();
    if (pid_ == 0) {
      execl(bin.c_str(), bin.c_str(), "-p", dir.c_str(), "-c", conf.c_str(), "-e", err.c_str(), nullptr);
      _exit(127);
    }
  }
  ~Nginx() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::string log() const { return read_file(dir_ / "error.log"); }

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

TEST(ServeNginx, TwoReplicasBehindTheDocumentedConfigOneKilledMidRun) {
  const std::string nginx = find_nginx();
  ASSERT_FALSE(nginx.empty()) << "nginx is not installed (scripts/install-deps.sh installs Debian's nginx)";
  std::string block = documented_config();
  ASSERT_NE(block.find("server 127.0.0.1:8081"), std::string::npos) << "docs/serving.md: no nginx example";

  const std::string model = shared_path("models/stories260K").string();
  // A 5 ms pause per step (test-only) makes a 32-token answer take ~0.2 s, so the kill
  // below finds requests in flight on A: nginx must retry them on B (non_idempotent).
  std::vector<std::string> args = {model, "--parallel", "2", "--threads", "1", "--test-step-delay-ms", "5"};
  auto a = std::make_unique<ServerProcess>(args);
  ServerProcess b(args);
  ASSERT_TRUE(a->wait_ready()) << a->stderr_text();
  ASSERT_TRUE(b.wait_ready()) << b.stderr_text();

  TempDir dir;
  const int port = free_port();
  replace_all(block, "127.0.0.1:8081", "127.0.0.1:" + std::to_string(a->port()));
  replace_all(block, "127.0.0.1:8082", "127.0.0.1:" + std::to_string(b.port()));
  replace_all(block, "listen 127.0.0.1:8080", "listen 127.0.0.1:" + std::to_string(port));
  write_file(dir.path() / "llmport.conf", block);
  const std::string d = dir.path().string();
  write_file(dir.path() / "nginx.conf",
             "daemon off;\nmaster_process off;\npid " + d + "/nginx.pid;\nerror_log " + d + "/error.log warn;\n"
             "events { worker_connections 256; }\n"
             "http {\n  access_log off;\n  client_body_temp_path " + d + "/client_body;\n"
             "  proxy_temp_path " + d + "/proxy;\n  fastcgi_temp_path " + d + "/fastcgi;\n"
             "  uwsgi_temp_path " + d + "/uwsgi;\n  scgi_temp_path " + d + "/scgi;\n"
             "  include " + d + "/llmport.conf;\n}\n");
  Nginx proxy(nginx, dir.path());
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  bool up = false;
  for (int i = 0; i < 100 && !up; ++i) {
    up = curl("GET", url + "/health", "", {}, 5).status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(up) << proxy.log();

  std::ifstream f(shared_path("models/stories260K/golden/public.json"));
  const json cases = json::parse(f).at("cases");
  auto ask = [&](std::size_t i) {
    const json& c = cases[i % cases.size()];
    const auto r = curl("POST", url + "/v1/completions",
                        json({{"prompt", c.at("prompt")}, {"max_tokens", c.at("n_steps")}, {"temperature", 0}}).dump());
    EXPECT_EQ(r.status, 200) << i << ": " << r.body;
    if (r.status == 200) {
      EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], c.at("completion_text")) << i;
    }
  };
  // Before the kill: both replicas answer.
  for (std::size_t i = 0; i < 8; ++i) ask(i);
  EXPECT_GE(completions_ok(*a), 1);
  EXPECT_GE(completions_ok(b), 1);
  EXPECT_EQ(completions_ok(*a) + completions_ok(b), 8);
  // Two clients keep asking while replica A is killed.
  const double b_before = completions_ok(b);
  std::atomic<int> done{0};
  auto client = [&](std::size_t k) {
    for (std::size_t i = 0; i < 12; ++i) {
      ask(k * 100 + i);
      done.fetch_add(1);
    }
  };
  auto c1 = std::async(std::launch::async, client, 1);
  auto c2 = std::async(std::launch::async, client, 2);
  while (done.load() < 6) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Kill A while it is generating an answer (bounded wait for one to be in flight there).
  bool busy = false;
  for (int i = 0; i < 200 && !busy; ++i)
    busy = metric(curl("GET", a->url("/metrics")).body, "llmport_requests_active") >= 1;
  EXPECT_TRUE(busy);
  a.reset();  // SIGKILL
  c1.get();
  c2.get();
  EXPECT_EQ(done.load(), 24);
  // Replica B answered every request after the kill (and some before it).
  EXPECT_GE(completions_ok(b) - b_before, 18) << proxy.log();
  EXPECT_EQ(curl("GET", url + "/health").status, 200);
}

}  // namespace
}  // namespace llmport::test
