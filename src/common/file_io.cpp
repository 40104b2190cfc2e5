#include "llmport/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "llmport/error.hpp"

namespace llmport {

namespace fs = std::filesystem;

namespace {

struct TooDeep {};

template <class Json>
Json parse_bounded(std::string_view text, const std::string& where, JsonKeys keys) {
  // The callback runs at every container start with the number of containers already
  // open, before the parser descends: a deep input stops here, long before anything
  // (conversion, dump, destruction) could recurse on it. Keys are checked per open object
  // (an array between two objects holds no keys, so only objects are tracked).
  std::vector<std::set<std::string>> open;
  auto cb = [&](int depth, typename Json::parse_event_t ev, Json& parsed) {
    using E = typename Json::parse_event_t;
    if ((ev == E::object_start || ev == E::array_start) && depth >= kMaxJsonDepth) throw TooDeep{};
    if (keys != JsonKeys::distinct) return true;
    if (ev == E::object_start) open.emplace_back();
    else if (ev == E::object_end) open.pop_back();
    else if (ev == E::key && !open.back().insert(parsed.template get<std::string>()).second)
      throw ConfigError(where + ": key \"" + printable(parsed.template get<std::string>()) +
                        "\" appears twice in one object (which one counts is ambiguous)");
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), cb);
  } catch (const TooDeep&) {
    throw ConfigError(where + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(where + ": malformed JSON: " + json_error_text(e));
  }
}

}  // namespace

std::string json_error_text(const nlohmann::json::exception& e, bool with_line) {
  const std::string what = e.what();
  // "[json.exception.<kind>.<id>] <message>"
  const auto close = what.find("] ");
  std::string msg = what.rfind("[json.exception.", 0) == 0 && close != std::string::npos ? what.substr(close + 2) : what;
  const auto* pe = dynamic_cast<const nlohmann::json::parse_error*>(&e);
  if (!pe) {
    // out_of_range.406 "number overflow parsing '1e999'" and the like.
    if (const auto p = msg.find("number overflow"); p != std::string::npos) msg = msg.substr(p);
    return printable(msg);
  }
  // "parse error at line 2, column 1: syntax error while parsing value - invalid literal;
  // last read: '...'": keep the position and the reason, not the bytes last read.
  std::string reason;
  if (const auto p = msg.find(" - "); p != std::string::npos) reason = msg.substr(p + 3);
  if (const auto q = reason.find(';'); q != std::string::npos) reason.resize(q);
  std::string at = "byte " + std::to_string(pe->byte);
  if (with_line) {
    const auto l = msg.find("at line "), c = msg.find(':', l == std::string::npos ? 0 : l);
    if (l != std::string::npos && c != std::string::npos) at = msg.substr(l + 3, c - l - 3);
  }
  return "syntax error at " + at + (reason.empty() ? "" : " (" + printable(reason) + ")");
}

nlohmann::json parse_json_text(std::string_view text, const std::string& where, JsonKeys keys) {
  return parse_bounded<nlohmann::json>(text, where, keys);
}

nlohmann::ordered_json parse_ordered_json_text(std::string_view text, const std::string& where, JsonKeys keys) {
  return parse_bounded<nlohmann::ordered_json>(text, where, keys);
}

std::string read_text_file(const fs::path& file, std::uint64_t max_bytes) {
  const std::string f = file.string();
  struct stat st {};
  if (::stat(f.c_str(), &st) != 0) throw ConfigError(f + ": cannot open for reading: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw ConfigError(f + ": is a directory, expected a file");
  if (!S_ISREG(st.st_mode)) throw ConfigError(f + ": not a regular file (a FIFO, socket or device)");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    throw ConfigError(f + ": " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                      " bytes accepted");
  // O_NONBLOCK: the path may have been swapped for a FIFO since the stat.
  int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw ConfigError(f + ": cannot open for reading: " + std::strerror(errno));
  struct stat st2 {};
  if (::fstat(fd, &st2) != 0 || !S_ISREG(st2.st_mode)) {
    ::close(fd);
    throw ConfigError(f + ": not a regular file");
  }
  std::string out;
  out.resize(static_cast<std::size_t>(st2.st_size));
  std::size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int err = errno;
      ::close(fd);
      throw ConfigError(f + ": read error: " + std::strerror(err));
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

std::string json_excerpt(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

long long json_integer(const nlohmann::json& v, const std::string& name, long long lo, long long hi) {
  auto range = [&] { return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]"; };
  const std::string shown = json_excerpt(v);
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (hi < 0 || u > static_cast<std::uint64_t>(hi))
      throw ConfigError("field '" + name + "': " + shown + " does not fit " + range());
    return static_cast<long long>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < lo || i > hi) throw ConfigError("field '" + name + "': " + shown + " does not fit " + range());
    return i;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d))
      throw ConfigError("field '" + name + "': expected an integer, got " + shown);
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
      throw ConfigError("field '" + name + "': " + shown + " does not fit " + range());
    return static_cast<long long>(d);
  }
  throw ConfigError("field '" + name + "': expected an integer, got " + shown);
}

std::string printable(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string o;
  o.reserve(s.size());
  auto esc = [&](unsigned char c) {
    o += "\\x";
    o += hex[c >> 4];
    o += hex[c & 15];
  };
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      o += "\\n";
      ++i;
      continue;
    }
    if (c < 0x20 || c == 0x7f) {
      esc(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      o += static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (no overlongs, surrogates or > U+10FFFF) is kept.
    std::size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    bool ok = n != 0 && c <= 0xf4 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && n >= 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      if (c == 0xe0 && c1 < 0xa0) ok = false;
      if (c == 0xed && c1 >= 0xa0) ok = false;
      if (c == 0xf0 && c1 < 0x90) ok = false;
      if (c == 0xf4 && c1 >= 0x90) ok = false;
    }
    if (!ok) {
      esc(c);
      ++i;
      continue;
    }
    // U+0080..U+009F (C1 controls) are escaped too.
    if (n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
      esc(c);
      esc(static_cast<unsigned char>(s[i + 1]));
      i += 2;
      continue;
    }
    o.append(s.substr(i, n));
    i += n;
  }
  return o;
}

void check_output_path(const fs::path& file, Overwrite policy, std::string_view marker) {
  const std::string f = file.string();
  std::error_code ec;
  const auto st = fs::symlink_status(file, ec);
  if (!ec && fs::exists(st)) {
    if (fs::is_directory(fs::status(file, ec))) throw UsageError(f + ": is a directory, expected a file path");
    if (!fs::is_regular_file(st)) throw UsageError(f + ": exists and is not a regular file; not overwriting");
    bool replace = policy == Overwrite::Always;
    if (policy == Overwrite::IfMarked && !marker.empty()) {
      std::string head;
      try {
        head = read_text_file(file, 64ull << 20);
      } catch (const Error&) {
        head.clear();
      }
      replace = head.find(marker) != std::string::npos;
    }
    if (!replace)
      throw UsageError(f + (policy == Overwrite::IfMarked
                                ? std::string(": exists and was not written by llmport; not overwriting (move it "
                                              "away or choose another directory)")
                                : std::string(": exists; not overwriting (use --force to replace it)")));
  }
}

void check_output_parent(const fs::path& file, const std::string& flag) {
  if (!file.has_parent_path()) return;  // the current directory
  const fs::path dir = file.parent_path();
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  const std::string where = flag + " " + file.string() + ": ";
  if (!fs::exists(st)) throw UsageError(where + "directory " + dir.string() + " does not exist");
  if (!fs::is_directory(st)) throw UsageError(where + dir.string() + " is not a directory");
}

fs::path unique_temp_path(const fs::path& file) {
  static std::atomic<unsigned long> counter{0};
  const std::size_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
  const std::string name = "." + file.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                           std::to_string(tid % 1000000007UL) + "." + std::to_string(counter++);
  return file.parent_path() / name;
}

void write_output_file(const fs::path& file, std::string_view text, Overwrite policy, std::string_view marker) {
  const std::string f = file.string();
  std::error_code ec;
  check_output_path(file, policy, marker);
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (file.has_parent_path()) {
    fs::create_directories(dir, ec);
    if (ec) throw UsageError(dir.string() + ": cannot create directory: " + ec.message());
  }
  std::string tmpl = (dir / ("." + file.filename().string() + ".tmp.XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw UsageError(f + ": cannot write: " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmpl.c_str());
      throw UsageError(f + ": write failed: " + std::strerror(err));
    }
    done += static_cast<std::size_t>(w);
  }
  ::fchmod(fd, 0644);
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    throw UsageError(f + ": write failed");
  }
  if (::rename(tmpl.c_str(), f.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw UsageError(f + ": cannot write: " + std::strerror(err));
  }
}

}  // namespace llmport
