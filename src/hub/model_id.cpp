#include "hub/model_id.hpp"

#include <algorithm>
#include <cctype>

namespace llmport::hub {

namespace {

bool all_lower_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// One part of a repo id: [A-Za-z0-9_.-]+, not starting or ending with '-' or '.'.
bool valid_part(const std::string& p) {
  if (p.empty()) return false;
  for (char c : p)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  auto edge = [](char c) { return c == '-' || c == '.'; };
  return !edge(p.front()) && !edge(p.back());
}

// A git ref name safe to use as a path under refs/: no "..", no empty segment, no
// whitespace or control characters (git check-ref-format is stricter; this is what
// keeps the cache path inside the repo folder).
bool valid_revision(const std::string& r) {
  if (r.empty() || r.front() == '/' || r.back() == '/' || r.find("..") != std::string::npos ||
      r.find("//") != std::string::npos)
    return false;
  return std::none_of(r.begin(), r.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)) ||
           c == '\\';
  });
}

}  // namespace

bool is_commit_hash(const std::string& s) { return s.size() == 40 && all_lower_hex(s); }
bool is_sha256_hex(const std::string& s) { return s.size() == 64 && all_lower_hex(s); }

std::optional<ModelId> parse_model_id(const std::string& text) {
  ModelId id;
  std::string repo = text;
  if (auto at = text.find('@'); at != std::string::npos) {
    repo = text.substr(0, at);
    id.revision = text.substr(at + 1);
    if (!valid_revision(id.revision)) return std::nullopt;
  } else {
    id.revision = "main";
  }
  auto slash = repo.find('/');
  if (slash == std::string::npos || repo.find('/', slash + 1) != std::string::npos) return std::nullopt;
  std::string org = repo.substr(0, slash), name = repo.substr(slash + 1);
  if (!valid_part(org) || !valid_part(name) || repo.size() > 96) return std::nullopt;
  if (repo.find("--") != std::string::npos || repo.find("..") != std::string::npos) return std::nullopt;
  id.repo_id = repo;
  return id;
}

}  // namespace llmport::hub
