#include "common/build_paths.hpp"
#include "verify/reference_program.hpp"

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

const ReferenceProgram& reference_program(const std::string& kind) {
  static const std::vector<ReferenceProgram> programs = {
      {"hf", "hf_reference.py", "LLMPORT_HF_REFERENCE", "torch, transformers", "pip install torch transformers", true},
      {"numpy", "numpy_reference.py", "LLMPORT_NUMPY_REFERENCE", "numpy",
       "apt install python3-numpy, or pip install numpy", false},
  };
  for (const auto& p : programs)
    if (p.kind == kind) return p;
  throw UsageError("--reference '" + kind + "': no such reference program (hf, numpy)");
}

fs::path shipped_reference_script(const ReferenceProgram& p) {
  const fs::path data = data_dir();
  // Installed: share/llmport/tools/; in the checkout tools/ sits beside data/.
  if (data == fs::path(build_data_dir())) return data.parent_path() / "tools" / p.script;
  return data / "tools" / p.script;
}

fs::path reference_script(const ReferenceProgram& p) {
  if (const char* env = std::getenv(p.env.c_str()); env && *env) return env;
  return shipped_reference_script(p);
}

nlohmann::json run_reference_program(const ReferenceProgram& p, const std::string& python, const fs::path& model_dir,
                                     const std::vector<PromptSpec>& prompts, bool chat, int n_steps, const fs::path& out,
                                     const std::vector<std::string>& extra_args) {
  const std::string flag = "--reference " + p.kind;
  const std::string py = usable_reference_python(p.kind, python);
  const fs::path script = reference_script(p);
  // Hashed before it runs: what ran is what the report names (a program that rewrites
  // itself afterwards is still caught).
  const std::string sha = hub::sha256_file(script);
  const bool is_shipped = sha == shipped_script_sha256(p.script.c_str());
  nlohmann::json pj = nlohmann::json::array();
  for (const auto& pr : prompts) {
    nlohmann::json e{{"name", pr.name}};
    if (pr.ids) e["prompt_ids"] = *pr.ids;
    else if (pr.text && p.tokenizes) e["text"] = *pr.text;
    else throw UsageError(flag + ": prompt " + pr.name + " has no token ids (this reference has no tokenizer)");
    pj.push_back(e);
  }
  fs::path pfile = out;
  pfile.replace_extension(".prompts.json");
  {
    std::ofstream f(pfile);
    if (!f) throw UsageError(pfile.string() + ": cannot write the prompt list for the " + p.kind + " reference");
    f << nlohmann::json{{"chat", chat}, {"prompts", pj}}.dump(1) << "\n";
  }
  std::string cmd = sh_quote(py) + " " + sh_quote(script.string()) + " --model " + sh_quote(model_dir.string()) +
                    " --prompts " + sh_quote(pfile.string()) + " --steps " + std::to_string(n_steps) + " --out " +
                    sh_quote(out.string()) + " --force";  // verify owns its report directory
  for (const auto& a : extra_args) cmd += " " + sh_quote(a);
  if (std::system(cmd.c_str()) != 0 || !fs::exists(out))
    throw UsageError(flag + ": " + script.string() + " failed (see its messages above)");
  // Which program produced the reference: a program other than the shipped one may print
  // anything, so the report names it and its hash, and the verdict is capped. The
  // interpreter is named too (it can print anything as well: the report is the evidence).
  return {{"program", fs::absolute(script).lexically_normal().string()},
          {"sha256", sha},
          {"shipped", is_shipped},
          {"python", py},
          {"kind", p.kind},
          {"script", p.script}};
}

}  // namespace llmport::verify_detail

namespace llmport {
namespace {
bool imports(const std::string& python, const std::string& modules) {
  const std::string probe = verify_detail::sh_quote(python) + " -c " + verify_detail::sh_quote("import " + modules) +
                            " >/dev/null 2>&1";
  return std::system(probe.c_str()) == 0;
}
}  // namespace

std::string usable_reference_python(const std::string& kind, const std::string& python) {
  const auto& p = verify_detail::reference_program(kind);
  const std::string flag = "--reference " + p.kind;
  const std::filesystem::path script = verify_detail::reference_script(p);
  if (!std::filesystem::exists(script)) throw UsageError(flag + ": " + script.string() + " not found (set " + p.env + ")");
  if (imports(python, p.imports)) return python;
  // PATH's python3 may be another interpreter (pyenv, a venv) than Debian's, where `apt
  // install python3-numpy` puts numpy; unless LLMPORT_PYTHON chose one, Debian's serves.
  const char* env = std::getenv("LLMPORT_PYTHON");
  const bool chosen = env && *env;
  if (!chosen && python == "python3" && imports(kDebianPython, p.imports)) return kDebianPython;
  throw UsageError(flag + " needs " + python + (chosen ? " (LLMPORT_PYTHON)" : "") + " with " + p.imports +
                   " installed (" + p.install + "; or point LLMPORT_PYTHON at an interpreter that has it); use "
                   "--reference golden:FILE or --reference oracle instead");
}

void require_reference_program(const std::string& kind, const std::string& python) {
  (void)usable_reference_python(kind, python);
}

std::string reference_python() {
  const char* py = std::getenv("LLMPORT_PYTHON");
  return py && *py ? py : "python3";
}
}  // namespace llmport
