#pragma once
// The independent reference programs `verify --reference hf|numpy` runs: a second
// implementation of the model outside llmport, run as a child process on the prompt set,
// writing an llmport-records/1 file (plus a full-logits side file) that verify reads.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/verify.hpp"

namespace llmport::verify_detail {

/// One reference program: a script shipped in tools/ (installed to share/llmport/tools/).
struct ReferenceProgram {
  std::string kind;     ///< the --reference value: "hf" or "numpy"
  std::string script;   ///< file name under tools/
  std::string env;      ///< environment variable that names another script
  std::string imports;  ///< Python modules the script needs ("torch, transformers")
  std::string install;  ///< how a user gets them
  bool tokenizes;       ///< true: the script tokenizes texts itself; false: it takes ids
};

/// The program of `kind` ("hf": tools/hf_reference.py, transformers; "numpy":
/// tools/numpy_reference.py, a numpy forward pass). Throws UsageError for another kind.
const ReferenceProgram& reference_program(const std::string& kind);

/// The shipped script of `p` (under this build's data directory's parent, or installed).
std::filesystem::path shipped_reference_script(const ReferenceProgram& p);
/// Path of the script that runs: $<p.env> when set, else the shipped one.
std::filesystem::path reference_script(const ReferenceProgram& p);

/// Runs the script with `python` on `prompts` (ids, or texts where p.tokenizes: chat renders
/// them with the tokenizer's chat template) for n_steps greedy steps and writes `out`
/// (llmport-records/1). `extra_args` go to the script as they are. Returns what ran:
/// {"program": path, "sha256": hex, "shipped": whether its bytes are the shipped script's,
/// "python": interpreter}. Throws UsageError when python or p.imports is missing, or the
/// script fails.
nlohmann::json run_reference_program(const ReferenceProgram& p, const std::string& python,
                                     const std::filesystem::path& model_dir, const std::vector<PromptSpec>& prompts,
                                     bool chat, int n_steps, const std::filesystem::path& out,
                                     const std::vector<std::string>& extra_args = {});

}  // namespace llmport::verify_detail
