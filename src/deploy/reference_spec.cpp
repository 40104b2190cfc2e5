// `--reference golden:FILE | hf | numpy | oracle`.
#include <filesystem>

#include "llmport/deploy.hpp"
#include "llmport/error.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

std::string ReferenceSpec::to_arg() const {
  return kind == "golden" ? "golden:" + file.string() : kind;
}

ReferenceSpec ReferenceSpec::parse(const std::string& s) {
  ReferenceSpec r;
  if (s == "hf" || s == "numpy" || s == "oracle") {
    r.kind = s;
    return r;
  }
  if (s.rfind("golden:", 0) == 0) {
    fs::path f = s.substr(7);
    if (f.empty()) throw UsageError("--reference golden:FILE: FILE is empty");
    if (!fs::is_regular_file(f))
      throw UsageError("--reference golden:" + f.string() + ": file not found");
    r.kind = "golden";
    r.file = fs::weakly_canonical(fs::absolute(f));
    return r;
  }
  throw UsageError("--reference '" + s + "': expected golden:FILE, hf, numpy or oracle");
}

}  // namespace llmport::deploy
