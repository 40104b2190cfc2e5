#pragma once
// What a local MODEL path may be: a model directory or its config file. Every command
// resolves MODEL through resolve_model (hub.hpp) and reads the config through
// find_config_json (model_config.hpp); both apply this one rule, so a weights or tokenizer
// file given as MODEL is named as such instead of being parsed as a config (a JSON syntax
// error at byte 1) or judged by the architecture gate (a REJECT, exit 3).
#include <filesystem>

namespace llmport {

/// Throws ConfigError (exit 2) when `path` is a regular file that cannot be a model's
/// config, naming the file, what it is and what was expected:
///   "<path>: is a safetensors weights file; MODEL must be a model directory or its
///    config.json (give its directory: <dir>)"
/// for *.safetensors; "is <name>, not the model's config" for tokenizer.json,
/// tokenizer_config.json, generation_config.json, special_tokens_map.json and
/// *.index.json; "is not a config .json file" for any other name not ending in .json (a
/// link is judged, and its directory named, by the file it points at). A directory,
/// a missing path, config.json and any other *.json (a config saved under another name,
/// shared/configs/gpt2.json) pass.
void check_model_path(const std::filesystem::path& path);

}  // namespace llmport
