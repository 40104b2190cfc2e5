#pragma once
// MODEL argument of tokenize/detokenize: a local directory holding tokenizer.json (a model
// directory or one with only tokenizer files; config.json is not required), else resolved
// like every other MODEL (HF id).
#include <filesystem>
#include <string>

#include "cli/command.hpp"
#include "llmport/error.hpp"

namespace llmport::cli {

inline std::string tokenizer_dir(const std::string& model) {
  if (model.empty()) throw UsageError("MODEL is required (a model directory or org/name id)");
  if (std::filesystem::is_directory(model)) return model;
  return resolve_model_dir(model);
}

}  // namespace llmport::cli
