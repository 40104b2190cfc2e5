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

nlohmann::json read_record(const Workspace& ws) {
  std::error_code ec;
  if (!fs::exists(record_file(ws), ec)) return nlohmann::json::object();
  auto j = nlohmann::json::parse(slurp(record_file(ws)), nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json::object();  // a damaged record: every file is llmport's
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
}  // namespace

void write_generated(const Workspace& ws, const fs::path& file, const std::string& text) {
  nlohmann::json record = read_record(ws);
  const std::string key = key_of(ws, file);
  std::error_code ec;
  if (record.contains(key) && record[key].is_string() && fs::is_regular_file(file, ec) &&
      sha256_file(file) != record[key].get<std::string>() && slurp(file) != text) {
    const fs::path kept = backup_name(file);
    fs::rename(file, kept, ec);
    if (ec) throw UsageError(file.string() + ": edited since llmport wrote it, and cannot be kept as " + kept.string() +
                             ": " + ec.message() + "; nothing was overwritten");
    std::cerr << "warning: " << file.string() << " was edited since llmport wrote it; your version is kept as "
              << kept.filename().string() << " (llmport regenerates " << file.filename().string()
              << " from deployment.json: keep notes in a file of your own)\n";
  }
  atomic_write(file, text);
  record[key] = sha256_string(text);
  atomic_write(record_file(ws), record.dump(1) + "\n");
}

}  // namespace llmport::deploy
