#include "deploy/generated_file.hpp"

#include <iostream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "deploy/util.hpp"
#include "llmport/error.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

namespace {
fs::path record_file(const Workspace& ws) { return ws.dir() / ".llmport-generated.json"; }

// The record as read, and when it could not be read, why (for the warning).
struct Record {
  nlohmann::json files = nlohmann::json::object();
  std::string damage;  // "" | "is missing" | "is unreadable"
};

Record read_record(const Workspace& ws) {
  Record r;
  std::error_code ec;
  if (!fs::exists(record_file(ws), ec)) {
    r.damage = "is missing";
    return r;
  }
  std::string text;
  try {
    text = slurp(record_file(ws));
  } catch (const Error&) {
    r.damage = "is unreadable";
    return r;
  }
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) r.files = std::move(j);
  else r.damage = "is unreadable";
  return r;
}

// The file's key in the record: its path inside the workspace.
std::string key_of(const Workspace& ws, const fs::path& file) { return file.lexically_relative(ws.dir()).string(); }

// A free name for the user's version: <file>.user-<time>[-n].
fs::path backup_name(const fs::path& file) {
  const std::string base = file.string() + ".user-" + now_compact();
  fs::path p = base;
  for (int n = 2; fs::exists(p); ++n) p = base + "-" + std::to_string(n);
  return p;
}

// The warning for an existing `file` that may hold the user's edits ("" when it is what
// llmport last wrote, or when rewriting it changes nothing), up to where the kept copy is
// named. Without a usable record entry llmport cannot tell its own text from an edit, so it
// keeps the file: a needless copy costs a file, a wrong guess costs the user's work.
std::string why_keep(const Record& record, const std::string& key, const fs::path& file, const std::string* text) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec) || (text && slurp(file) == *text)) return "";
  const std::string rec = "llmport's record of the files it generated (.llmport-generated.json) ";
  std::string damage = record.damage;
  const auto it = record.files.find(key);
  if (damage.empty() && it == record.files.end()) damage = "has no entry for it";
  else if (damage.empty() && !it->is_string()) damage = "has a malformed entry for it";
  if (!damage.empty())
    return file.string() + " may hold your edits: " + rec + damage + ", so the existing file is kept as ";
  if (sha256_file(file) != it->get<std::string>())
    return file.string() + " was edited since llmport wrote it; your version is kept as ";
  return "";
}

// Renames an edited `file` to <file>.user-<time> with one warning line; see write_generated.
void set_aside(const Record& record, const std::string& key, const fs::path& file, const std::string* text) {
  const std::string why = why_keep(record, key, file, text);
  if (why.empty()) return;
  const fs::path kept = backup_name(file);
  std::error_code ec;
  fs::rename(file, kept, ec);
  if (ec) throw UsageError(why + kept.string() + ", but it cannot be renamed (" + ec.message() +
                           "); nothing was overwritten");
  std::cerr << "warning: " << why << kept.filename().string() << " (llmport regenerates "
            << file.filename().string() << " from deployment.json: keep notes in a file of your own)\n";
}
}  // namespace

void write_generated(const Workspace& ws, const fs::path& file, const std::string& text) {
  Record record = read_record(ws);
  const std::string key = key_of(ws, file);
  set_aside(record, key, file, &text);
  atomic_write(file, text);
  record.files[key] = sha256_string(text);
  atomic_write(record_file(ws), record.files.dump(1) + "\n");
}

void remove_generated(const Workspace& ws, const fs::path& file) {
  set_aside(read_record(ws), key_of(ws, file), file, nullptr);
  std::error_code ec;
  fs::remove(file, ec);
}

}  // namespace llmport::deploy
