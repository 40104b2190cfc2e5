#include "cli/bench_compare.hpp"

#include <cmath>
#include <cstdint>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"

namespace llmport::cli {
namespace {

int int_field(const nlohmann::json& row, const char* key, const std::string& where) {
  if (!row.contains(key) || !row[key].is_number_integer())
    throw UsageError(where + ": field '" + key + "' is missing or not an integer");
  const auto v = row[key].get<int64_t>();
  if (v < 0 || v > 1'000'000'000) throw UsageError(where + ": field '" + key + "' is out of range");
  return static_cast<int>(v);
}

LlamaBenchRow parse_row(const nlohmann::json& row, const std::string& where) {
  if (!row.is_object()) throw UsageError(where + ": not a JSON object");
  LlamaBenchRow r;
  r.n_prompt = int_field(row, "n_prompt", where);
  r.n_gen = int_field(row, "n_gen", where);
  if (row.contains("n_depth")) r.n_depth = int_field(row, "n_depth", where);
  r.n_threads = int_field(row, "n_threads", where);
  if (!row.contains("avg_ts") || !row["avg_ts"].is_number())
    throw UsageError(where + ": field 'avg_ts' is missing or not a number");
  r.avg_ts = row["avg_ts"].get<double>();
  if (!(r.avg_ts > 0) || !std::isfinite(r.avg_ts)) throw UsageError(where + ": field 'avg_ts' must be > 0");
  if (row.contains("model_type") && row["model_type"].is_string()) r.model_type = row["model_type"];
  return r;
}

}  // namespace

std::vector<LlamaBenchRow> read_llama_bench(const std::filesystem::path& file) {
  const std::string name = "--compare " + file.string();
  std::string text;
  try {
    text = read_text_file(file, std::uint64_t{64} << 20);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--compare ") + e.what());
  }
  std::vector<LlamaBenchRow> rows;
  // -o json is one array; -o jsonl one object per line.
  const auto first = text.find_first_not_of(" \t\r\n");
  try {
    if (first != std::string::npos && text[first] == '[') {
      const nlohmann::json doc = parse_json_text(text, name);
      for (std::size_t i = 0; i < doc.size(); ++i)
        rows.push_back(parse_row(doc[i], name + ": row " + std::to_string(i)));
    } else if (const nlohmann::json whole = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
               whole.is_object() && text.find('\n', first) < text.find_last_not_of(" \t\r\n")) {
      // One object over several lines (pretty-printed): read whole, not as JSONL lines.
      rows.push_back(parse_row(whole, name));
    } else {
      std::istringstream lines(text);
      std::string line;
      for (int n = 1; std::getline(lines, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = name + ": line " + std::to_string(n);
        rows.push_back(parse_row(parse_json_text(line, where), where));
      }
    }
  } catch (const ConfigError& e) {
    throw UsageError(std::string(e.what()) + " (expected llama-bench -o json or -o jsonl)");
  }
  if (rows.empty()) throw UsageError(name + ": no llama-bench results in the file");
  std::set<std::string> models;
  for (const auto& r : rows)
    if (!r.model_type.empty()) models.insert(r.model_type);
  if (models.size() > 1) {
    std::string list;
    for (const auto& m : models) list += (list.empty() ? "" : ", ") + ("'" + m + "'");
    throw UsageError(name + ": results of " + std::to_string(models.size()) + " models (model_type " + list +
                     "); give a file with this model's runs only");
  }
  return rows;
}

std::optional<double> llama_bench_best(const std::vector<LlamaBenchRow>& rows, int n_prompt, int n_gen,
                                       int threads) {
  std::optional<double> best;
  for (const auto& r : rows)
    if (r.n_prompt == n_prompt && r.n_gen == n_gen && r.n_threads == threads && r.n_depth == 0)
      best = std::max(best.value_or(0.0), r.avg_ts);
  return best;
}

}  // namespace llmport::cli
