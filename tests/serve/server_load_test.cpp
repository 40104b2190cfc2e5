// A bounded load-and-fault run on loopback: LLMPORT_SERVE_LOAD_REQUESTS requests (default
// 2000 in CI; the issue's 10,000 by hand) from 8 raw-socket clients, mixing valid greedy
// completions (whole and streamed) with malformed JSON, wrong types, unparsable HTTP,
// oversized bodies (declared and sent), and abrupt disconnects (before the body, after the
// request, mid-stream). The server stays up, /health stays 200 throughout, no slot leaks
// (the metrics gauges return to 0), RSS after the run is within 5% of RSS after a warm-up
// run of the same mix, and every valid request gets its golden answer.
#include <atomic>
#include <fstream>
#include <future>

#include "serve/serve_test_util.hpp"

// Under ASan the freed memory sits in its quarantine (up to 256 MiB) and TSan keeps shadow
// memory: RSS says nothing there. The asan build checks leaks with LSan instead (the server
// exits through SIGTERM; a leak report makes its exit code non-zero).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kRssMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kRssMeaningful = false;
#else
constexpr bool kRssMeaningful = true;
#endif
#else
constexpr bool kRssMeaningful = true;
#endif

namespace llmport::test {
namespace {

using json = nlohmann::json;

struct Answer {
  int status = 0;
  std::string body;
};

// Sends `request` on a fresh connection and reads the answer to EOF (Connection: close).
Answer http_exchange(int port, const std::string& request, int seconds = 10) {
  const int fd = raw_connect_send(port, request);
  if (fd < 0) return {};
  const std::string s = read_until(fd, "\r\n0\r\n\r\n", seconds);  // EOF or a chunked end
  close(fd);
  Answer a;
  if (s.rfind("HTTP/1.1 ", 0) == 0) a.status = std::atoi(s.c_str() + 9);
  const auto h = s.find("\r\n\r\n");
  if (h != std::string::npos) a.body = s.substr(h + 4);
  return a;
}

std::string request(const std::string& path, const std::string& body, const std::string& type = "application/json") {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

long rss_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (f >> key) {
    if (key == "VmRSS:") {
      long kb = 0;
      f >> kb;
      return kb;
    }
    f.ignore(1 << 20, '\n');
  }
  return -1;
}

bool is_openai_error(const std::string& body, int status) {
  const auto j = json::parse(body, nullptr, false);
  return status >= 400 && j.is_object() && j.contains("error") && j["error"]["message"].is_string() &&
         j["error"]["type"].is_string();
}

class LoadRun {
 public:
  LoadRun(int port, json cases) : port_(port), cases_(std::move(cases)) {}

  // Request i of the mix; records what was wrong.
  void one(std::size_t i) {
    const json& c = cases_[i % cases_.size()];
    const json valid = {{"prompt", c.at("prompt")}, {"max_tokens", c.at("n_steps")}, {"temperature", 0}};
    const std::string path = "/v1/completions";
    switch (i % 12) {
      case 0: case 1: case 2: case 3: {  // valid, whole
        check_valid(i, http_exchange(port_, request(path, valid.dump())), c);
        break;
      }
      case 4: {  // valid, in curl -d's form content type
        check_valid(i, http_exchange(port_, request(path, valid.dump(), "application/x-www-form-urlencoded")), c);
        break;
      }
      case 5: {  // valid, streamed, read to the end
        json s = valid;
        s["stream"] = true;
        const auto a = http_exchange(port_, request(path, s.dump()));
        std::string text;
        for (const auto& e : sse_payloads(dechunk(a.body)))
          if (e != "[DONE]") text += json::parse(e)["choices"][0]["text"].get<std::string>();
        if (a.status != 200 || text != c.at("completion_text").get<std::string>()) fail(i, a.status, text);
        break;
      }
      case 6: expect_error(i, http_exchange(port_, request(path, "{\"prompt\": \"a\", ")), 400); break;
      case 7: expect_error(i, http_exchange(port_, request(path, R"({"prompt":"a","max_tokens":"ten"})")), 400); break;
      case 8: {  // oversized: declared (the server answers 413 without the body) and, rarely, sent
        if (i % 120 == 8) {
          expect_error(i, http_exchange(port_, request(path, std::string((8u << 20) + 1, ' '))), 413);
        } else {
          const int fd = raw_connect_send(port_, "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 9437184\r\n\r\n{\"a");
          if (fd >= 0) close(fd);
        }
        break;
      }
      case 9: {  // not HTTP
        const int fd = raw_connect_send(port_, "\x16\x03\x01 garbage \r\n\r\n");
        if (fd >= 0) {
          read_until(fd, "\r\n\r\n", 5);
          close(fd);
        }
        break;
      }
      case 10: {  // a whole valid request, then hang up without reading
        const int fd = raw_connect_send(port_, request(path, valid.dump()));
        if (fd >= 0) close(fd);
        break;
      }
      case 11: {  // streamed, hang up after the first event
        json s = valid;
        s["stream"] = true;
        const int fd = raw_connect_send(port_, request(path, s.dump()));
        if (fd >= 0) {
          read_until(fd, "data: ", 5);
          close(fd);
        }
        break;
      }
    }
  }
  std::vector<std::string> failures() const {
    std::lock_guard<std::mutex> l(mu_);
    return failures_;
  }
  int valid_ok() const { return valid_ok_.load(); }

 private:
  static std::string dechunk(const std::string& body) {
    std::string out;
    std::size_t p = 0;
    while (p < body.size()) {
      const auto nl = body.find("\r\n", p);
      if (nl == std::string::npos) break;
      const std::size_t n = std::stoul(body.substr(p, nl - p), nullptr, 16);
      if (n == 0) break;
      out += body.substr(nl + 2, n);
      p = nl + 2 + n + 2;
    }
    return out;
  }
  void check_valid(std::size_t i, const Answer& a, const json& c) {
    const auto j = json::parse(a.body, nullptr, false);
    if (a.status == 200 && j.is_object() && j["choices"][0]["text"] == c.at("completion_text")) {
      valid_ok_.fetch_add(1);
      return;
    }
    fail(i, a.status, a.body);
  }
  void expect_error(std::size_t i, const Answer& a, int status) {
    if (a.status != status || !is_openai_error(a.body, status)) fail(i, a.status, a.body);
  }
  void fail(std::size_t i, int status, const std::string& what) {
    std::lock_guard<std::mutex> l(mu_);
    if (failures_.size() < 20)
      failures_.push_back("request " + std::to_string(i) + ": " + std::to_string(status) + " " + what.substr(0, 200));
  }
  int port_;
  json cases_;
  mutable std::mutex mu_;
  std::vector<std::string> failures_;
  std::atomic<int> valid_ok_{0};
};

// Runs requests [first, first + n) from `clients` threads, none started after `deadline`;
// returns how many were not started.
std::size_t run_mix(LoadRun& run, std::size_t first, std::size_t n, int clients,
                    std::chrono::steady_clock::time_point deadline) {
  std::atomic<std::size_t> next{first}, skipped{0};
  std::vector<std::future<void>> fs;
  for (int k = 0; k < clients; ++k)
    fs.push_back(std::async(std::launch::async, [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < first + n;) {
        if (std::chrono::steady_clock::now() > deadline) {
          skipped.fetch_add(1);
          continue;
        }
        run.one(i);
      }
    }));
  for (auto& f : fs) f.get();
  return skipped.load();
}

std::string metrics_text(int port) {
  return http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").body;
}

// The gauges back at 0 (bounded wait: hung-up requests are cancelled within ~100 ms).
bool settled(int port, std::string& m) {
  for (int i = 0; i < 100; ++i) {
    m = metrics_text(port);
    if (metric(m, "llmport_kv_cache_slots_in_use") == 0 && metric(m, "llmport_requests_active") == 0 &&
        metric(m, "llmport_requests_queued") == 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(ServeLoad, MixedValidMalformedOversizedAndDisconnectsNoLeaksRightAnswers) {
  const char* env = std::getenv("LLMPORT_SERVE_LOAD_REQUESTS");
  const std::size_t n = env ? std::strtoul(env, nullptr, 10) : 2000;
  ASSERT_GE(n, 120u);
  // Bounded in time too: a server that stalls fails the run instead of hanging it (each
  // exchange waits 10 s at most).
  const char* env_s = std::getenv("LLMPORT_SERVE_LOAD_SECONDS");
  const double max_s = env_s ? std::atof(env_s) : 120;
  std::ifstream f(shared_path("models/stories260K/golden/public.json"));
  const json cases = json::parse(f).at("cases");
  ServerProcess s({shared_path("models/stories260K").string(), "--parallel", "4", "--queue", "64", "--threads", "1"});
  ASSERT_TRUE(s.wait_ready()) << s.stderr_text();
  LoadRun run(s.port(), cases);
  const std::size_t kWarmup = 600;
  const int clients = 8;  // with hung-up requests at most 16 admitted: never a 429

  // /health, polled throughout.
  std::atomic<bool> stop{false};
  std::atomic<int> health_polls{0}, health_bad{0};
  auto monitor = std::async(std::launch::async, [&] {
    while (!stop.load()) {
      const auto a = http_exchange(s.port(), "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10);
      health_polls.fetch_add(1);
      if (a.status != 200) health_bad.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });

  struct StopMonitor {  // on every exit (an ASSERT too): the monitor's future waits for it
    std::atomic<bool>& flag;
    ~StopMonitor() { flag.store(true); }
  } stop_monitor{stop};
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(max_s));
  std::size_t skipped = run_mix(run, 0, kWarmup, clients, deadline);  // warm-up: every kind, pool threads and allocator arenas
  std::string m;
  ASSERT_TRUE(settled(s.port(), m)) << m;
  const long rss_before = rss_kib(s.pid());
  skipped += run_mix(run, kWarmup, n, clients, deadline);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop.store(true);
  monitor.get();
  EXPECT_TRUE(settled(s.port(), m)) << m;
  const long rss_after = rss_kib(s.pid());
  std::cerr << "load run: " << n << " requests (+" << kWarmup << " warm-up) in " << secs << " s, valid ok " << run.valid_ok()
            << ", RSS " << rss_before << " -> " << rss_after << " KiB\n";

  EXPECT_EQ(skipped, 0u) << "requests not started within " << max_s << " s";
  for (const auto& e : run.failures()) ADD_FAILURE() << e;
  // The whole valid answers (kinds 0-4 of 12; the streamed kind 5 is checked, not counted): all right.
  std::size_t whole = 0;
  for (std::size_t i = 0; i < kWarmup + n; ++i) whole += (i % 12) <= 4;
  EXPECT_EQ(static_cast<std::size_t>(run.valid_ok()), whole);
  EXPECT_GT(health_polls.load(), 0);
  EXPECT_EQ(health_bad.load(), 0);
  EXPECT_EQ(metric(m, "llmport_kv_cache_slots_total"), 4);
  ASSERT_GT(rss_before, 0);
  if (kRssMeaningful) {
    EXPECT_LE(std::abs(rss_after - rss_before), rss_before / 20) << rss_before << " -> " << rss_after << " KiB";
  }
  // Still serving.
  EXPECT_EQ(kill(s.pid(), 0), 0);
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 20), 0) << s.stderr_text();
}

}  // namespace
}  // namespace llmport::test
