#include "common/build_paths.hpp"
#include "verify/hf_reference.hpp"

#include "llmport/data_dir.hpp"

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "hub/file_hash.hpp"
#include "llmport/error.hpp"

namespace llmport::verify_detail {
namespace fs = std::filesystem;

namespace {
std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

fs::path shipped_hf_reference_script() {
  const fs::path data = data_dir();
  // Installed: share/llmport/tools/; in the checkout tools/ sits beside data/.
  if (data == fs::path(build_data_dir())) return data.parent_path() / "tools" / "hf_reference.py";
  return data / "tools" / "hf_reference.py";
}

fs::path hf_reference_script() {
  if (const char* env = std::getenv("LLMPORT_HF_REFERENCE"); env && *env) return env;
  return shipped_hf_reference_script();
}

nlohmann::json run_hf_reference(const std::string& python, const fs::path& model_dir, const std::vector<PromptSpec>& prompts,
                                bool chat, int n_steps, const fs::path& out, const std::string& torch_dtype) {
  const fs::path script = hf_reference_script();
  if (!fs::exists(script))
    throw UsageError("--reference hf: " + script.string() + " not found (set LLMPORT_HF_REFERENCE)");
  // Hashed before it runs: what ran is what the report names (a program that rewrites
  // itself afterwards is still caught).
  const std::string sha = hub::sha256_file(script);
  const fs::path shipped = shipped_hf_reference_script();
  const bool is_shipped = fs::exists(shipped) && hub::sha256_file(shipped) == sha;
  const std::string probe = sh_quote(python) + " -c 'import torch, transformers' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0)
    throw UsageError("--reference hf needs " + python +
                     " with torch and transformers installed (pip install torch transformers); "
                     "use --reference golden:FILE or --reference oracle instead");
  nlohmann::json pj = nlohmann::json::array();
  for (const auto& p : prompts) {
    nlohmann::json e{{"name", p.name}};
    if (p.ids) e["prompt_ids"] = *p.ids;
    else if (p.text) e["text"] = *p.text;
    pj.push_back(e);
  }
  fs::path pfile = out;
  pfile.replace_extension(".prompts.json");
  {
    std::ofstream f(pfile);
    if (!f) throw UsageError(pfile.string() + ": cannot write the prompt list for the hf reference");
    f << nlohmann::json{{"chat", chat}, {"prompts", pj}}.dump(1) << "\n";
  }
  const std::string cmd = sh_quote(python) + " " + sh_quote(script.string()) + " --model " +
                          sh_quote(model_dir.string()) + " --prompts " + sh_quote(pfile.string()) + " --steps " +
                          std::to_string(n_steps) + " --out " + sh_quote(out.string()) +
                          (torch_dtype.empty() ? std::string() : " --dtype " + sh_quote(torch_dtype));
  if (std::system(cmd.c_str()) != 0 || !fs::exists(out))
    throw UsageError("--reference hf: " + script.string() + " failed (see its messages above)");
  // Which program produced the reference: a program other than the shipped one may print
  // anything, so the report names it and its hash, and the verdict is capped. The
  // interpreter is named too (it can print anything as well: the report is the evidence).
  return {{"program", fs::absolute(script).lexically_normal().string()},
          {"sha256", sha},
          {"shipped", is_shipped},
          {"python", python}};
}

}  // namespace llmport::verify_detail
