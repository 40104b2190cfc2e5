#include "support/test_support.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace llmport::test {
namespace fs = std::filesystem;

fs::path shared_dir() {
  const char* env = std::getenv("LLMPORT_SHARED");
  fs::path p = (env && *env) ? fs::path(env) : fs::path(LLMPORT_SOURCE_DIR) / ".." / "shared";
  if (!fs::is_directory(p)) {
    ADD_FAILURE() << "shared data not found at " << p << " (set LLMPORT_SHARED)";
    throw std::runtime_error("shared data missing: " + p.string());
  }
  return fs::weakly_canonical(p);
}

fs::path shared_path(const std::string& rel) {
  fs::path p = shared_dir() / rel;
  if (!fs::exists(p)) {
    ADD_FAILURE() << "shared data missing: " << p;
    throw std::runtime_error("shared data missing: " + p.string());
  }
  return p;
}

static std::string slurp_fd(int fd) {
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return s;
}

namespace {
// Runs argv[0] (looked up in PATH unless it holds a '/') with stdin_text on its stdin.
RunResult run_program(std::vector<std::string> args, const std::string& stdin_text) {
  int in_p[2], out_p[2], err_p[2];
  if (pipe(in_p) || pipe(out_p) || pipe(err_p)) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in_p[0], 0);
    dup2(out_p[1], 1);
    dup2(err_p[1], 2);
    close(in_p[1]);
    close(out_p[0]);
    close(err_p[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // A hang (e.g. a blocking read of a FIFO) ends the child after 5 minutes (exit 142,
    // SIGALRM) instead of hanging the test; the alarm survives exec.
    alarm(300);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(in_p[0]);
  close(out_p[1]);
  close(err_p[1]);
  std::thread writer([&] {
    size_t off = 0;
    while (off < stdin_text.size()) {
      ssize_t n = ::write(in_p[1], stdin_text.data() + off, stdin_text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(in_p[1]);
  });
  RunResult r;
  std::thread err_reader([&] { r.err = slurp_fd(err_p[0]); });
  r.out = slurp_fd(out_p[0]);
  err_reader.join();
  writer.join();
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}
}  // namespace

RunResult deploy_quick(const std::vector<std::string>& args, const std::string& stdin_text) {
  std::vector<std::string> a = {"deploy"};
  a.insert(a.end(), args.begin(), args.end());
  a.insert(a.end(), {"--threads", "1", "--quick"});
  return run_llmport(a, stdin_text);
}

RunResult run_llmport(const std::vector<std::string>& args, const std::string& stdin_text) {
  std::vector<std::string> argv = {LLMPORT_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(std::move(argv), stdin_text);
}

RunResult run_make(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"make", "--no-print-directory"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(std::move(argv), "");
}

TempDir::TempDir() {
  std::random_device rd;
  path_ = fs::temp_directory_path() / ("llmport-test-" + std::to_string(getpid()) + "-" +
                                       std::to_string(rd()));
  fs::create_directories(path_);
}
TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& data) {
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f << data;
}

std::string smaps_line(const void* p, const std::string& key) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind(key, 0) == 0) return line;
  }
  return "";
}

ScopedEnv::~ScopedEnv() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second)
      ::setenv(it->first.c_str(), it->second->c_str(), 1);
    else
      ::unsetenv(it->first.c_str());
  }
}

void ScopedEnv::set(const std::string& name, const std::optional<std::string>& value) {
  const char* old = std::getenv(name.c_str());
  saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  if (value)
    ::setenv(name.c_str(), value->c_str(), 1);
  else
    ::unsetenv(name.c_str());
}

std::filesystem::path stories_dir() { return shared_path("models/stories260K"); }

std::filesystem::path copy_stories(const std::filesystem::path& dst) {
  std::filesystem::create_directories(dst);
  for (const auto& e : std::filesystem::directory_iterator(shared_path("models/stories260K")))
    if (e.is_regular_file()) std::filesystem::copy_file(e.path(), dst / e.path().filename());
  return dst;
}

void edit_f32_tensor(const std::filesystem::path& file, const std::string& name,
                     const std::function<void(float&, std::size_t)>& edit) {
  std::string data = read_file(file);
  uint64_t n = 0;
  std::memcpy(&n, data.data(), 8);
  const auto header = nlohmann::json::parse(data.substr(8, n));
  if (!header.contains(name) || header.at(name).at("dtype") != "F32")
    throw std::runtime_error(file.string() + ": " + name + " is not an F32 tensor");
  const auto begin = 8 + n + header.at(name).at("data_offsets").at(0).get<uint64_t>();
  const auto end = 8 + n + header.at(name).at("data_offsets").at(1).get<uint64_t>();
  for (uint64_t off = begin; off + sizeof(float) <= end; off += sizeof(float)) {
    float v;
    std::memcpy(&v, data.data() + off, sizeof v);
    edit(v, (off - begin) / sizeof(float));
    std::memcpy(data.data() + off, &v, sizeof v);
  }
  write_file(file, data);
}

void copy_stories_with_nan(const std::filesystem::path& dst, const std::string& name) {
  edit_f32_tensor(copy_stories(dst) / "model.safetensors", name, [](float& v, std::size_t i) {
    if (i == 0) v = std::numeric_limits<float>::quiet_NaN();
  });
}

}  // namespace llmport::test
