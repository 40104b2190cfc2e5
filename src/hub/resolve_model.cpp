// resolve_model: local path -> HF cache (used in place) -> download into that cache.
#include <cstdio>
#include <filesystem>

#include "hub/hf_cache.hpp"
#include "hub/hub_env.hpp"
#include "hub/hub_session.hpp"
#include "hub/model_files.hpp"
#include "hub/model_id.hpp"
#include "hub/progress_bar.hpp"
#include "llmport/error.hpp"
#include "llmport/hub.hpp"
#include "llmport/model_path.hpp"

namespace llmport {
namespace fs = std::filesystem;
using namespace hub;

namespace {

// What a cached snapshot lacks: `required` files llmport cannot work without, `wanted`
// files a repo normally has (fetched when online; neither present nor known absent).
struct SnapshotGaps {
  std::vector<std::string> required;
  std::vector<std::string> wanted;
};

SnapshotGaps inspect_snapshot(const RepoCache& cache, const std::string& commit, bool config_only) {
  SnapshotGaps g;
  if (!cache.has_file(commit, kConfigFile)) g.required.push_back(kConfigFile);
  if (!cache.has_file(commit, kGenerationConfigFile) && !cache.marked_missing(commit, kGenerationConfigFile))
    g.wanted.push_back(kGenerationConfigFile);
  if (config_only) return g;
  if (cache.has_file(commit, kWeightsIndexFile)) {
    for (const auto& shard : index_shards(cache.snapshot_dir(commit) / kWeightsIndexFile))
      if (!cache.has_file(commit, shard)) g.required.push_back(shard);
  } else if (!cache.has_file(commit, kWeightsFile)) {
    g.required.push_back(cache.marked_missing(commit, kWeightsIndexFile)
                             ? std::string(kWeightsFile)
                             : std::string(kWeightsFile) + " (or " + kWeightsIndexFile + " and its shards)");
  }
  const std::string tok = tokenizer_files().front();  // tokenizer.json
  if (!cache.has_file(commit, tok) && !cache.marked_missing(commit, tok)) g.wanted.push_back(tok);
  return g;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

ResolvedModel download(const ModelId& id, const HubEnv& env, const RepoCache& cache, const ResolveOptions& opt) {
  HubSession hub(env, id.repo_id, opt.quiet);
  uint64_t bytes = 0;
  // config.json at the requested revision pins the commit; every other file is then
  // asked for at that commit so the snapshot is consistent even if a branch moves.
  auto config_meta = hub.file_meta(id.revision, kConfigFile, true);
  const std::string commit = config_meta->commit;

  auto fetch = [&](const std::string& file, bool required, std::optional<FileMeta> known = std::nullopt) {
    if (cache.has_file(commit, file)) return true;
    if (!required && cache.marked_missing(commit, file)) return false;
    auto meta = known ? known : hub.file_meta(commit, file, required);
    if (!meta) {
      cache.mark_missing(commit, file);
      return false;
    }
    bytes += hub.fetch_blob(cache, *meta, file);
    cache.link_snapshot(commit, file, meta->etag);
    return true;
  };

  fetch(kConfigFile, true, config_meta);
  fetch(kGenerationConfigFile, false);
  if (!opt.config_only) {
    for (const auto& f : tokenizer_files()) fetch(f, false);
    if (fetch(kWeightsIndexFile, false)) {
      for (const auto& shard : index_shards(cache.snapshot_dir(commit) / kWeightsIndexFile)) fetch(shard, true);
    } else if (!fetch(kWeightsFile, false)) {
      throw UsageError("model '" + id.repo_id + "' at revision '" + id.revision + "' has neither " + kWeightsFile +
                       " nor " + kWeightsIndexFile + ": llmport reads safetensors weights only");
    }
  }
  cache.write_ref(id.revision, commit);
  if (bytes > 0 && !opt.quiet)
    std::fprintf(stderr, "downloaded %s@%s (%s) into %s\n", id.repo_id.c_str(), commit.substr(0, 12).c_str(),
                 human_bytes(static_cast<double>(bytes)).c_str(), cache.snapshot_dir(commit).c_str());
  return ResolvedModel{cache.snapshot_dir(commit), id.repo_id, id.revision, commit};
}

}  // namespace

bool is_hub_model(const std::string& model) {
  std::error_code ec;
  return !model.empty() && !fs::exists(model, ec) && parse_model_id(model).has_value();
}

ResolvedModel resolve_model(const std::string& model, const ResolveOptions& opt) {
  if (model.empty()) throw UsageError("MODEL is empty: give a model directory or a Hugging Face id org/name");
  std::error_code ec;
  if (fs::exists(model, ec)) {
    check_model_path(model);
    return ResolvedModel{fs::path(model), "", "", ""};
  }
  auto id = parse_model_id(model);
  if (!id)
    throw UsageError("model '" + model +
                     "' not found: no such directory or file, and not a Hugging Face id org/name[@revision]");

  const HubEnv env = read_hub_env();
  const bool offline = opt.offline || env.offline;
  const RepoCache cache(env.cache_root, id->repo_id);
  const std::string name = id->repo_id + (id->revision == "main" ? "" : "@" + id->revision);

  auto cached = cache.commit_for(id->revision);
  SnapshotGaps gaps;
  if (cached) {
    gaps = inspect_snapshot(cache, *cached, opt.config_only);
    if (gaps.required.empty() && (gaps.wanted.empty() || offline))
      return ResolvedModel{cache.snapshot_dir(*cached), id->repo_id, id->revision, *cached};
  }
  if (offline) {
    const std::string how = "offline mode is on (HF_HUB_OFFLINE=1 or --offline): download it once online (e.g. "
                            "`huggingface-cli download " + id->repo_id + "`)";
    if (!cached)
      throw UsageError("model '" + name + "' is not in the Hugging Face cache " + env.cache_root.string() +
                       " and " + how);
    throw UsageError("model '" + name + "' in the Hugging Face cache (" + cache.snapshot_dir(*cached).string() +
                     ") lacks " + join(gaps.required) + " and " + how);
  }
  try {
    return download(*id, env, cache, opt);
  } catch (const NetworkError& e) {
    if (e.partial_transfer) throw;
    if (cached && gaps.required.empty()) {
      if (!opt.quiet)
        std::fprintf(stderr, "note: cannot reach %s to fetch %s of %s; using the cached snapshot\n",
                     env.endpoint.c_str(), join(gaps.wanted).c_str(), name.c_str());
      return ResolvedModel{cache.snapshot_dir(*cached), id->repo_id, id->revision, *cached};
    }
    throw UsageError("cannot reach the Hugging Face hub at " + env.endpoint + " to download '" + name +
                     "' (" + e.what() + "): check the network and HF_ENDPOINT, or put the model in the cache " +
                     env.cache_root.string() + " and set HF_HUB_OFFLINE=1");
  }
}

}  // namespace llmport
