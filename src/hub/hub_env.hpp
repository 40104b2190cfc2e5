#pragma once
// The Hugging Face hub environment, read the way huggingface_hub reads it
// (huggingface_hub/constants.py): endpoint, cache root, token, offline mode, timeouts.
#include <filesystem>
#include <optional>
#include <string>

namespace llmport::hub {

struct HubEnv {
  std::string endpoint;               ///< $HF_ENDPOINT or https://huggingface.co, no trailing '/'
  std::filesystem::path cache_root;   ///< $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
  std::optional<std::string> token;   ///< $HF_TOKEN, else the token file huggingface-cli login writes
  std::filesystem::path token_file;   ///< where the token file is looked for (for messages)
  bool offline = false;               ///< HF_HUB_OFFLINE=1|ON|YES|TRUE
  bool progress_disabled = false;     ///< HF_HUB_DISABLE_PROGRESS_BARS
  long etag_timeout_s = 10;           ///< HF_HUB_ETAG_TIMEOUT: metadata (HEAD) request, s
  long download_timeout_s = 10;       ///< HF_HUB_DOWNLOAD_TIMEOUT: connect / stalled read, s
};

/// Reads the environment now (tests change it between calls).
HubEnv read_hub_env();

/// True when the variable holds 1/ON/YES/TRUE (any case), as huggingface_hub's _is_true.
bool env_is_true(const char* name);

}  // namespace llmport::hub
