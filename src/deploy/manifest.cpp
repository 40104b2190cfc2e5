#include "deploy/manifest.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "deploy/manifest_fields.hpp"
#include "deploy/util.hpp"
#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/model_config.hpp"
#include "llmport/weights.hpp"

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

namespace {
Manifest read_fields(const ManifestFields& f) {
  Manifest m;
  m.name = f.get<std::string>("name");
  const ManifestFields mo = f.object("model");
  m.model_dir = mo.get<std::string>("path");
  m.repo_id = mo.get<std::string>("repo_id", "");
  m.revision = mo.get<std::string>("revision", "");
  m.commit = mo.get<std::string>("commit", "");
  m.architecture = mo.get<std::string>("architecture", "");
  m.content_hash = mo.get<std::string>("content_hash", "");
  m.file_hashes = mo.get<std::map<std::string, std::string>>("files", {});
  if (mo.has("file_stats"))
    for (const auto& [name, st] : mo.raw("file_stats").items()) {
      const ManifestFields sf(st, mo.name("file_stats") + "." + name);
      m.file_stats[name] = {static_cast<std::uintmax_t>(sf.integer("size", 0, 0, std::numeric_limits<int64_t>::max())),
                            sf.integer("mtime_ns", 0, std::numeric_limits<int64_t>::min(),
                                       std::numeric_limits<int64_t>::max())};
    }
  m.has_tokenizer = mo.get<bool>("has_tokenizer", false);
  m.target = f.get<std::string>("target");
  if (m.target != "cpu") throw ConfigError("target: '" + m.target + "' is not a target llmport deploys to (cpu)");
  m.dtype = f.get<std::string>("dtype");
  // What deploy writes; a value it cannot have written would reach serve/resume as a flag
  // the user never gave ("--reference 'zzz'", "unknown dtype").
  try {
    EngineOptions probe;
    set_dtype_flag(probe, m.dtype);
  } catch (const UsageError& e) {
    throw ConfigError(std::string("dtype: ") + e.what());
  }
  m.quantize_lm_head = f.get<std::string>("quantize_lm_head", "");
  // Negative counts mean nothing (0 = every core / the config's context); the upper bound
  // of threads is the machine's, checked where a backend starts (resolve_backend_threads).
  m.threads = static_cast<int>(f.integer("threads", 0, 0, std::numeric_limits<int>::max()));
  m.isa = f.get<std::string>("isa", "");
  m.max_seq = static_cast<int>(f.integer("max_seq", 0, 0, std::numeric_limits<int>::max()));
  if (f.has("verify")) {
    const ManifestFields v = f.object("verify");
    m.verify_top_k = static_cast<int>(v.integer("top_k", 5, 1, std::numeric_limits<int>::max()));
    m.verify_kl_bound = v.get<double>("kl_bound", 0.0);
    m.verify_min_top1 = v.get<double>("min_top1", 0.0);
    if (!(m.verify_kl_bound >= 0 && std::isfinite(m.verify_kl_bound)))
      throw ConfigError("verify.kl_bound: " + std::to_string(m.verify_kl_bound) + " is not a KL bound (>= 0)");
    if (!(m.verify_min_top1 >= 0 && m.verify_min_top1 <= 1))
      throw ConfigError("verify.min_top1: " + std::to_string(m.verify_min_top1) + " is not a share in [0, 1]");
  }
  const ManifestFields r = f.object("reference");
  m.reference.kind = r.get<std::string>("kind");
  if (m.reference.kind != "golden" && m.reference.kind != "hf" && m.reference.kind != "numpy" &&
      m.reference.kind != "oracle")
    throw ConfigError("reference.kind: '" + m.reference.kind + "' (expected golden, hf, numpy or oracle)");
  if (m.reference.kind == "golden") {
    m.reference.file = r.get<std::string>("file");
    m.reference_hash = r.get<std::string>("sha256", "");
  }
  m.prompts_file = f.get<std::string>("prompts_file", "");
  m.first_prompt_ids = f.get<std::vector<int>>("first_prompt_ids", {});
  m.llmport_version = f.get<std::string>("llmport_version", "");
  m.created = f.get<std::string>("created", "");
  m.updated = f.get<std::string>("updated", "");
  const nlohmann::json& ph = f.raw("phases");
  if (!ph.is_array() || ph.size() != static_cast<std::size_t>(kNumPhases))
    throw ConfigError("phases: must list " + std::to_string(kNumPhases) + " phases");
  for (std::size_t i = 0; i < ph.size(); ++i) {
    m.phases[i] = PhaseResult::from_json(ph[i], "phases[" + std::to_string(i) + "]");
    m.phases[i].phase = static_cast<int>(i);
  }
  if (f.has("kernel_configs")) m.kernel_configs = f.raw("kernel_configs");
  if (f.has("resolved_config")) m.resolved_config = f.raw("resolved_config");
  if (f.has("measured")) m.measured = f.raw("measured");
  if (f.has("test_options")) {
    const ManifestFields t = f.object("test_options");
    m.fault = t.get<std::string>("fault", "");
    m.quick = t.get<bool>("quick", false);
  }
  m.needs_human_review = f.get<bool>("needs_human_review", false);
  return m;
}
}  // namespace

Manifest Manifest::from_json(const nlohmann::json& j, const fs::path& file) {
  // A record that is no object ("[]") or has a field of the wrong type is named that way,
  // not as nlohmann's "[json.exception.type_error.306] cannot use value() with array".
  if (!j.is_object())
    throw ConfigError(file.string() + ": expected a JSON object (a deployment record), got " + j.type_name());
  if (!j.contains("format") || j["format"] != kFormat)
    throw ConfigError(file.string() + ": format is not " + std::string(kFormat));
  try {
    Manifest m = read_fields(ManifestFields(j, ""));
    // Keys llmport does not write (a user's note) are carried through every later save.
    static const nlohmann::json known = Manifest().to_json();  // the keys llmport writes
    for (const auto& [k, v] : j.items())
      if (!known.contains(k)) m.user_keys[k] = v;
    return m;
  } catch (const ConfigError& e) {
    throw ConfigError(file.string() + ": not a valid deployment record: " + e.what());
  } catch (const nlohmann::json::exception& e) {  // a field read without a name (timing)
    throw ConfigError(file.string() + ": not a valid deployment record: " + json_error_text(e, false));
  }
}

Manifest Manifest::load(const fs::path& file) {
  // Keys distinct: a dtype given twice ran serve at the second while the gates held the first.
  return from_json(parse_json_text(read_text_file(file), file.string(), JsonKeys::distinct), file);
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
  // The weights are the files the loader reads (weight_files): model.safetensors wins over
  // an index beside it, as in transformers, so one appearing after the deployment is the
  // model now; a stray consolidated.safetensors is read by no one and is not part of it.
  std::set<std::string> weights;
  for (const fs::path& f : weight_files(model_dir)) weights.insert(f.filename().string());
  // The index is read only when it chooses the weights (no model.safetensors beside it).
  const bool index_read = !weights.empty() && !weights.count("model.safetensors");
  for (const auto& e : fs::directory_iterator(model_dir)) {
    if (!e.is_regular_file()) continue;
    std::string n = e.path().filename().string();
    bool wanted = n == "config.json" || n == "generation_config.json" ||
                  n == "tokenizer.json" || n == "tokenizer_config.json" ||
                  n == "special_tokens_map.json" || n == "chat_template.jinja" ||
                  (n == "model.safetensors.index.json" && index_read) || n == "added_tokens.json" ||
                  weights.count(n);
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
