#pragma once
// MODEL argument of tokenize/detokenize: a local directory holding tokenizer.json (a model
// directory or one with only tokenizer files; config.json is not required) or that
// tokenizer.json file, else resolved
// like every other MODEL (HF id).
#include <filesystem>
#include <string>

#include "cli/command.hpp"
#include "llmport/error.hpp"

namespace llmport::cli {

inline std::string tokenizer_dir(const std::string& model) {
  if (model.empty()) throw UsageError("MODEL is required (a model directory or org/name id)");
  if (std::filesystem::is_directory(model)) return model;
  // tokenizer.json itself is what these commands read (resolve_model refuses it as a MODEL).
  if (std::filesystem::path(model).filename() == "tokenizer.json" && std::filesystem::is_regular_file(model))
    return model;
  // The tokenizer is read from a directory's tokenizer.json: another file name (a renamed
  // copy, "tok.json") would silently read the tokenizer.json beside it, or name a file the
  // user never gave.
  if (std::filesystem::is_regular_file(model) && std::filesystem::path(model).filename() != "config.json")
    throw UsageError(model + ": not a model directory, config.json or tokenizer.json (the tokenizer is read from "
                             "a file named tokenizer.json; give its directory)");
  return resolve_model_dir(model);
}

}  // namespace llmport::cli
