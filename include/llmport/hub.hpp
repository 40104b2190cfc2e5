#pragma once
// Model sources: a local path, the Hugging Face cache (standard layout) or a download
// from the hub's resolve endpoint into that cache.
#include <filesystem>
#include <optional>
#include <string>

namespace llmport {

/// Options of model resolution.
struct ResolveOptions {
  bool offline = false;      ///< also implied by HF_HUB_OFFLINE=1
  bool config_only = false;  ///< fetch only config.json (+ generation_config.json)
  bool quiet = false;        ///< no progress bar
};

/// Where a model came from.
struct ResolvedModel {
  std::filesystem::path dir;     ///< directory holding config.json etc.
  std::string repo_id;           ///< "org/name" when it came from the hub, else ""
  std::string revision;          ///< requested revision ("main" default)
  std::string commit;            ///< resolved commit hash, when known
};

/// Resolves MODEL: a local directory / config.json path if it exists (returned as given);
/// else an HF id `org/name[@revision]` from the HF cache in huggingface_hub's layout
/// ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub), used in place; else
/// a download from $HF_ENDPOINT into that cache (unless offline: opt.offline or
/// HF_HUB_OFFLINE=1). dir is then <cache>/models--org--name/snapshots/<commit>.
/// Downloads are locked, resumable, verified (size; sha256 / git blob sha1 per ETag) and
/// atomic. See docs/model_sources.md.
/// Throws UsageError (exit 2) for a path that does not exist and is not an id, and for
/// download failures (401/403 gated, 404, no network, disk full, corrupt download, offline
/// with the model not cached) with one actionable line; ConfigError for a malformed
/// model.safetensors.index.json.
ResolvedModel resolve_model(const std::string& model, const ResolveOptions& opt = {});

/// True when resolve_model(model) would go to the HF cache or the network: nothing exists at
/// the path `model` and it reads as an id org/name[@revision]. Lets a command check its
/// other arguments before a download, and a local MODEL before its other arguments.
bool is_hub_model(const std::string& model);

}  // namespace llmport
