#include "hub/hub_env.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace llmport::hub {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::string trim(std::string s) {
  auto ws = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), ws));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), ws).base(), s.end());
  return s;
}

fs::path expand_user(const std::string& p) {
  if (p.size() >= 1 && p[0] == '~' && (p.size() == 1 || p[1] == '/')) {
    auto home = env("HOME");
    if (home) return fs::path(*home) / p.substr(p.size() > 1 ? 2 : 1);
  }
  return fs::path(p);
}

long env_seconds(const char* name, long dflt) {
  auto v = env(name);
  if (!v) return dflt;
  char* end = nullptr;
  double d = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || d <= 0) return dflt;
  return std::max(1L, static_cast<long>(d + 0.5));
}

}  // namespace

bool env_is_true(const char* name) {
  auto v = env(name);
  if (!v) return false;
  std::string s = trim(*v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s == "1" || s == "ON" || s == "YES" || s == "TRUE";
}

HubEnv read_hub_env() {
  HubEnv e;
  e.endpoint = trim(env("HF_ENDPOINT").value_or("https://huggingface.co"));
  while (!e.endpoint.empty() && e.endpoint.back() == '/') e.endpoint.pop_back();

  // HF_HOME defaults to $XDG_CACHE_HOME/huggingface, XDG_CACHE_HOME to ~/.cache.
  fs::path hf_home;
  if (auto h = env("HF_HOME")) {
    hf_home = expand_user(*h);
  } else {
    fs::path xdg = env("XDG_CACHE_HOME") ? expand_user(*env("XDG_CACHE_HOME")) : expand_user("~/.cache");
    hf_home = xdg / "huggingface";
  }
  if (auto c = env("HF_HUB_CACHE")) {
    e.cache_root = expand_user(*c);
  } else if (auto legacy = env("HUGGINGFACE_HUB_CACHE")) {
    e.cache_root = expand_user(*legacy);
  } else {
    e.cache_root = hf_home / "hub";
  }

  e.token_file = env("HF_TOKEN_PATH") ? expand_user(*env("HF_TOKEN_PATH")) : hf_home / "token";
  if (auto t = env("HF_TOKEN")) {
    e.token = trim(*t);
  } else if (auto legacy = env("HUGGING_FACE_HUB_TOKEN")) {
    e.token = trim(*legacy);
  } else {
    std::ifstream in(e.token_file);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      std::string t = trim(ss.str());
      if (!t.empty()) e.token = t;
    }
  }
  if (e.token && e.token->empty()) e.token.reset();

  e.offline = env_is_true("HF_HUB_OFFLINE");
  e.progress_disabled = env_is_true("HF_HUB_DISABLE_PROGRESS_BARS");
  e.etag_timeout_s = env_seconds("HF_HUB_ETAG_TIMEOUT", 10);
  e.download_timeout_s = env_seconds("HF_HUB_DOWNLOAD_TIMEOUT", 10);
  return e;
}

}  // namespace llmport::hub
