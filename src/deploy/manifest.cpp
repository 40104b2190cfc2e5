#include "deploy/manifest.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "deploy/util.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/model_config.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

Manifest::Manifest() {
  for (int i = 0; i < kNumPhases; ++i) phases[static_cast<std::size_t>(i)].phase = i;
}

nlohmann::json Manifest::to_json() const {
  nlohmann::json ph = nlohmann::json::array();
  for (const auto& p : phases) ph.push_back(p.to_json());
  nlohmann::json ref = {{"kind", reference.kind}, {"independent", reference.independent()}};
  if (reference.kind == "golden") {
    ref["file"] = reference.file.string();
    ref["sha256"] = reference_hash;
  }
  nlohmann::json stats_json = nlohmann::json::object();
  for (const auto& [f, st] : file_stats) stats_json[f] = {{"size", st.size}, {"mtime_ns", st.mtime_ns}};
  nlohmann::json j = {{"format", kFormat},
          {"name", name},
          {"model", {{"path", model_dir.string()},
                     {"repo_id", repo_id},
                     {"revision", revision},
                     {"commit", commit},
                     {"architecture", architecture},
                     {"content_hash", content_hash},
                     {"files", file_hashes},
                     {"file_stats", stats_json},
                     {"has_tokenizer", has_tokenizer}}},
          {"target", target},
          {"dtype", dtype},
          {"quantize_lm_head", quantize_lm_head},
          {"threads", threads},
          {"isa", isa},
          {"max_seq", max_seq},
          {"verify", {{"top_k", verify_top_k}, {"kl_bound", verify_kl_bound}, {"min_top1", verify_min_top1}}},
          {"reference", ref},
          {"prompts_file", prompts_file.string()},
          {"first_prompt_ids", first_prompt_ids},
          {"llmport_version", llmport_version},
          {"created", created},
          {"updated", updated},
          {"phases", ph},
          {"kernel_configs", kernel_configs},
          {"resolved_config", resolved_config},
          {"measured", measured},
          {"test_options", {{"fault", fault}, {"quick", quick}}},
          {"needs_human_review", needs_human_review}};
  for (const auto& [k, v] : user_keys.items())
    if (!j.contains(k)) j[k] = v;
  return j;
}

Manifest Manifest::from_json(const nlohmann::json& j, const fs::path& file) {
  // A record that is no object ("[]") or has a field of the wrong type named that way, not
  // as nlohmann's "[json.exception.type_error.306] cannot use value() with array".
  if (!j.is_object())
    throw ConfigError(file.string() + ": expected a JSON object (a deployment record), got " + j.type_name());
  try {
    if (j.value("format", "") != kFormat)
      throw ConfigError(file.string() + ": format is not " + std::string(kFormat));
    Manifest m;
    m.name = j.at("name").get<std::string>();
    const auto& mo = j.at("model");
    m.model_dir = mo.at("path").get<std::string>();
    m.repo_id = mo.value("repo_id", "");
    m.revision = mo.value("revision", "");
    m.commit = mo.value("commit", "");
    m.architecture = mo.value("architecture", "");
    m.content_hash = mo.value("content_hash", "");
    m.file_hashes = mo.value("files", std::map<std::string, std::string>{});
    if (mo.contains("file_stats"))
      for (const auto& [f, st] : mo.at("file_stats").items())
        m.file_stats[f] = {st.at("size").get<std::uintmax_t>(), st.at("mtime_ns").get<std::int64_t>()};
    m.has_tokenizer = mo.value("has_tokenizer", false);
    m.target = j.at("target").get<std::string>();
    m.dtype = j.at("dtype").get<std::string>();
    m.quantize_lm_head = j.value("quantize_lm_head", "");
    m.threads = j.value("threads", 0);
    m.isa = j.value("isa", "");
    m.max_seq = j.value("max_seq", 0);
    if (j.contains("verify")) {
      m.verify_top_k = j["verify"].value("top_k", 5);
      m.verify_kl_bound = j["verify"].value("kl_bound", 0.0);
      m.verify_min_top1 = j["verify"].value("min_top1", 0.0);
    }
    const auto& r = j.at("reference");
    m.reference.kind = r.at("kind").get<std::string>();
    if (m.reference.kind == "golden") {
      m.reference.file = r.at("file").get<std::string>();
      m.reference_hash = r.value("sha256", "");
    }
    m.prompts_file = j.value("prompts_file", "");
    m.first_prompt_ids = j.value("first_prompt_ids", std::vector<int>{});
    m.llmport_version = j.value("llmport_version", "");
    m.created = j.value("created", "");
    m.updated = j.value("updated", "");
    const auto& ph = j.at("phases");
    if (!ph.is_array() || ph.size() != static_cast<std::size_t>(kNumPhases))
      throw ConfigError(file.string() + ": phases must list " + std::to_string(kNumPhases) + " phases");
    for (std::size_t i = 0; i < ph.size(); ++i) {
      m.phases[i] = PhaseResult::from_json(ph[i]);
      m.phases[i].phase = static_cast<int>(i);
    }
    if (j.contains("kernel_configs")) m.kernel_configs = j["kernel_configs"];
    if (j.contains("resolved_config")) m.resolved_config = j["resolved_config"];
    if (j.contains("measured")) m.measured = j["measured"];
    if (j.contains("test_options")) {
      m.fault = j["test_options"].value("fault", "");
      m.quick = j["test_options"].value("quick", false);
    }
    m.needs_human_review = j.value("needs_human_review", false);
    // Keys llmport does not write (a user's note) are carried through every later save.
    static const nlohmann::json known = Manifest().to_json();  // the keys llmport writes
    for (const auto& [k, v] : j.items())
      if (!known.contains(k)) m.user_keys[k] = v;
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(file.string() + ": not a valid deployment record: " + json_error_text(e, false));
  }
}

Manifest Manifest::load(const fs::path& file) {
  return from_json(read_json_file(file), file);
}

void Manifest::save(const fs::path& file) {
  updated = now_iso();
  atomic_write(file, to_json().dump(2) + "\n");
}

int Manifest::first_unpassed() const {
  for (int i = 0; i < kNumPhases; ++i)
    if (!is_pass(phases[static_cast<std::size_t>(i)].status)) return i;
  return kNumPhases;
}

std::vector<std::string> model_file_names(const fs::path& model_dir) {
  std::vector<std::string> out;
  // With an index only the shards it names are model files (a stray
  // consolidated.safetensors is not read by llmport, so it is not part of the model).
  std::set<std::string> shards;
  bool indexed = fs::is_regular_file(model_dir / "model.safetensors.index.json");
  if (indexed) {
    auto idx = read_json_file(model_dir / "model.safetensors.index.json");
    if (idx.contains("weight_map") && idx["weight_map"].is_object())
      for (const auto& [k, v] : idx["weight_map"].items())
        if (v.is_string()) shards.insert(v.get<std::string>());
  }
  for (const auto& e : fs::directory_iterator(model_dir)) {
    if (!e.is_regular_file()) continue;
    std::string n = e.path().filename().string();
    bool wanted = n == "config.json" || n == "generation_config.json" ||
                  n == "tokenizer.json" || n == "tokenizer_config.json" ||
                  n == "special_tokens_map.json" || n == "chat_template.jinja" ||
                  n == "model.safetensors.index.json" ||
                  (n.ends_with(".safetensors") && (!indexed || shards.count(n)));
    if (wanted) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, std::string> hash_model_files(const fs::path& model_dir, std::map<std::string, FileStat>* stats) {
  std::map<std::string, std::string> out;
  for (const auto& n : model_file_names(model_dir)) {
    // Stat first: a write during the hash then moves the mtime past the recorded one, so
    // status flags the file rather than trusting a hash of half-old content.
    if (stats)
      if (auto st = stat_file(model_dir / n)) (*stats)[n] = *st;
    out[n] = sha256_file(model_dir / n);
  }
  return out;
}

Manifest load_deployment_arg(const fs::path& arg) {
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::absolute(arg), ec);
  if (ec) dir = fs::absolute(arg);
  if (dir.filename() == "deployment.json" && fs::is_regular_file(dir)) dir = dir.parent_path();
  const fs::path file = dir / "deployment.json";
  if (!fs::is_regular_file(file))
    throw UsageError("--deployment " + arg.string() + ": not a deployment (no deployment.json)");
  return Manifest::load(file);
}

std::optional<FileStat> stat_file(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  return FileStat{static_cast<std::uintmax_t>(st.st_size),
                  static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

std::map<std::string, FileStat> stat_model_files(const fs::path& model_dir,
                                                 const std::map<std::string, std::string>& names) {
  std::map<std::string, FileStat> out;
  for (const auto& [n, h] : names)
    if (auto st = stat_file(model_dir / n)) out[n] = *st;
  return out;
}

std::vector<std::string> stat_changed_files(const Manifest& m, const fs::path& model_dir) {
  std::vector<std::string> changed;
  std::vector<std::string> now;
  try {
    now = model_file_names(model_dir);
  } catch (const std::exception&) {  // a vanished or unreadable model directory
    return {model_dir.string() + " (unreadable)"};
  }
  // The same file sets audit_weights compares (the hashed files against the model files
  // now), with a stat in place of each hash.
  for (const auto& [f, h] : m.file_hashes) {
    const auto st = std::find(now.begin(), now.end(), f) == now.end() ? std::nullopt : stat_file(model_dir / f);
    const auto rec = m.file_stats.find(f);
    if (!st) changed.push_back(f + " (missing)");
    else if (rec == m.file_stats.end() || !(*st == rec->second)) changed.push_back(f);
  }
  for (const auto& f : now)
    if (!m.file_hashes.count(f)) changed.push_back(f + " (new)");
  return changed;
}

std::string combine_hashes(const std::map<std::string, std::string>& hashes) {
  std::string s;
  for (const auto& [k, v] : hashes) s += k + ":" + v + "\n";
  return sha256_string(s);
}

}  // namespace llmport::deploy
