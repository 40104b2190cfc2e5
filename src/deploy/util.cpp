#include "deploy/util.hpp"

#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <ostream>
#include <sstream>
#include <unistd.h>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/model_config.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

namespace {
std::string format_now(const char* fmt) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

std::string to_hex(const unsigned char* d, unsigned n) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (unsigned i = 0; i < n; ++i) {
    s.push_back(hex[d[i] >> 4]);
    s.push_back(hex[d[i] & 15]);
  }
  return s;
}

struct MdCtx {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  MdCtx() { EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr); }
  ~MdCtx() { EVP_MD_CTX_free(ctx); }
  void update(const void* p, std::size_t n) { EVP_DigestUpdate(ctx, p, n); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestFinal_ex(ctx, md, &n);
    return to_hex(md, n);
  }
};
}  // namespace

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

std::string md_uncell(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (!(s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '|')) out += s[i];
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += sep;
    s += v[i];
  }
  return s;
}

fs::path set_aside_unknown_files(const fs::path& dir, const std::function<bool(const fs::path&)>& ours,
                                 const std::string& why, std::ostream& warn) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return {};
  // Listed first, moved after: moving while iterating would skip or revisit entries.
  std::vector<fs::path> unknown;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::file_status st = it->symlink_status(ec);
    if (fs::is_directory(st)) continue;  // judged by what it holds; an empty one holds nothing of the user's
    if (fs::is_regular_file(st) && ours(it->path())) continue;
    unknown.push_back(it->path());
  }
  if (ec) throw UsageError(dir.string() + ": cannot list it (" + ec.message() + "); nothing in it was removed");
  if (unknown.empty()) return {};
  const std::string base = dir.string() + ".user-" + now_compact();
  fs::path dest = base;
  for (int n = 2; fs::exists(fs::symlink_status(dest, ec)); ++n) dest = base + "-" + std::to_string(n);
  for (const fs::path& f : unknown) {
    const fs::path to = dest / f.lexically_relative(dir);
    fs::create_directories(to.parent_path(), ec);
    if (!ec) fs::rename(f, to, ec);
    if (ec)
      throw UsageError(f.string() + ": not a file llmport wrote, and cannot be kept as " + to.string() + " (" +
                       ec.message() + "); nothing in " + dir.string() + " was removed");
  }
  warn << "warning: " << dir.string() << " is llmport's (" << why << ") but held " << unknown.size()
       << (unknown.size() == 1 ? " file" : " files") << " llmport did not write ("
       << unknown.front().lexically_relative(dir).string() << (unknown.size() > 1 ? ", ..." : "")
       << "); kept in " << dest.string() << "\n";
  return dest;
}

std::string now_iso() { return format_now("%Y-%m-%dT%H:%M:%SZ"); }
std::string now_compact() { return format_now("%Y%m%d-%H%M%S"); }

void atomic_write(const fs::path& file, const std::string& text) {
  write_output_file(file, text, Overwrite::Always);
}

void append_file(const fs::path& file, const std::string& text) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  std::ofstream o(file, std::ios::binary | std::ios::app);
  if (!o) throw UsageError(file.string() + ": cannot append");
  o << text;
}

std::string slurp(const fs::path& file) {
  std::ifstream i(file, std::ios::binary);
  if (!i) throw UsageError(file.string() + ": cannot read");
  std::ostringstream s;
  s << i.rdbuf();
  return s.str();
}

std::string sha256_file(const fs::path& file) {
  std::ifstream i(file, std::ios::binary);
  if (!i) throw UsageError(file.string() + ": cannot read for hashing");
  MdCtx md;
  std::array<char, 1 << 16> buf;
  while (i) {
    i.read(buf.data(), buf.size());
    if (i.gcount() > 0) md.update(buf.data(), static_cast<std::size_t>(i.gcount()));
  }
  return md.hex();
}

std::string sha256_string(const std::string& s) {
  MdCtx md;
  md.update(s.data(), s.size());
  return md.hex();
}

}  // namespace llmport::deploy

namespace llmport::deploy {

std::string reference_files_sha256(const std::filesystem::path& file) {
  const std::string own = sha256_file(file);
  std::string side;
  try {
    const auto j = read_json_file(file);
    if (j.is_object() && j.contains("side_file") && j["side_file"].is_string())
      side = j["side_file"].get<std::string>();
  } catch (const std::exception&) {
    return own;  // not JSON we can read: the file's bytes are all there is
  }
  if (side.empty()) return own;
  const auto side_path = file.parent_path() / side;
  return sha256_string(own + ":" + (std::filesystem::is_regular_file(side_path) ? sha256_file(side_path) : "missing"));
}

}  // namespace llmport::deploy
