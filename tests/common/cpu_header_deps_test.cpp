// The backend boundary, checked on what the compiler saw: every object of this build lists
// the files it was compiled from in its dependency file (CMakeFiles/<target>.dir/**/*.o.d,
// Makefile syntax, written by -MD for GCC and clang). No object outside the cpu backend's
// folder (src/kernels/cpu/), the backend factory (src/kernels/backends.cpp) and the cpu
// backend's own unit tests (tests/kernels/) may depend on a file under src/kernels/cpu/:
// everything else talks to the cpu backend through llmport/kernels.hpp only. A grep of
// #include lines would miss a cpu header reached through another header; the compiler's
// list does not.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace llmport::test {
namespace {

namespace fs = std::filesystem;

struct DepFile {
  /// The compiled source files (absolute, normalized): the object's source, or the test
  /// files a generated batch source includes (tests/CMakeLists.txt compiles a module's
  /// tests in batches; the batch source itself, in the build tree, is only the wrapper).
  std::vector<fs::path> sources;
  std::vector<fs::path> headers;  ///< every other prerequisite (absolute, normalized)
};

// Prerequisites of the first Make rule "obj: a b \<newline> c": whitespace-separated after
// the first ": ", backslash-newline continuing the line, "\ " an escaped space in a path.
std::vector<std::string> prerequisites(const std::string& text) {
  const auto colon = text.find(": ");
  std::vector<std::string> out;
  if (colon == std::string::npos) return out;
  std::string cur;
  for (std::size_t i = colon + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) continue;
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      cur += ' ';
      ++i;
      continue;
    }
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      // A blank line ends the first rule (-MP adds phony rules for headers after it).
      if (c == '\n' && i + 1 < text.size() && text[i + 1] == '\n') break;
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Relative prerequisites are relative to the directory the compiler ran in: the one
// holding the target's CMakeFiles/ folder (ccache's base_dir makes paths relative).
fs::path compile_dir_of(const fs::path& dep_file) {
  for (fs::path p = dep_file.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
    if (p.filename() == "CMakeFiles") return p.parent_path();
  return dep_file.parent_path();
}

std::vector<DepFile> dependency_files(const fs::path& build_dir) {
  std::vector<DepFile> out;
  for (const auto& e : fs::recursive_directory_iterator(build_dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.size() < 4 || name.substr(name.size() - 4) != ".o.d") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const auto pre = prerequisites(ss.str());
    if (pre.empty()) continue;
    const fs::path cwd = compile_dir_of(e.path());
    auto resolve = [&](const std::string& p) {
      const fs::path path(p);
      return (path.is_absolute() ? path : cwd / path).lexically_normal();
    };
    // The source is the first prerequisite with a source extension: clang's sanitizer
    // builds list their ignore list (asan_ignorelist.txt) before it.
    const auto is_source = [](const std::string& p) {
      const std::string ext = fs::path(p).extension().string();
      return ext == ".cpp" || ext == ".cc" || ext == ".cxx" || ext == ".c";
    };
    const auto src = std::find_if(pre.begin(), pre.end(), is_source);
    if (src == pre.end()) continue;
    if (!fs::exists(resolve(*src))) continue;  // a stale object of a deleted source
    DepFile d;
    for (auto it = std::next(src); it != pre.end(); ++it)
      (is_source(*it) ? d.sources : d.headers).push_back(resolve(*it));
    if (d.sources.empty()) d.sources.push_back(resolve(*src));
    for (auto it = pre.begin(); it != src; ++it) d.headers.push_back(resolve(*it));
    out.push_back(std::move(d));
  }
  return out;
}

bool under(const fs::path& p, const fs::path& dir) {
  const auto rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

// Objects allowed to see the cpu backend's internals.
bool may_include_cpu_headers(const fs::path& source, const fs::path& src_root) {
  return under(source, src_root / "src" / "kernels" / "cpu") ||
         source == src_root / "src" / "kernels" / "backends.cpp" ||
         under(source, src_root / "tests" / "kernels");
}

// The objects that break the rule, one line each: "<source> -> <first cpu header>", naming
// the first of an object's sources that may not see the backend (a batch of test files is
// allowed only when every file in it is).
std::vector<std::string> violations(const std::vector<DepFile>& deps, const fs::path& src_root) {
  const fs::path cpu_dir = src_root / "src" / "kernels" / "cpu";
  std::vector<std::string> out;
  for (const DepFile& d : deps) {
    const auto outsider = std::find_if(d.sources.begin(), d.sources.end(), [&](const fs::path& s) {
      return !may_include_cpu_headers(s, src_root);
    });
    if (outsider == d.sources.end()) continue;
    for (const fs::path& h : d.headers)
      if (under(h, cpu_dir)) {
        out.push_back(outsider->lexically_relative(src_root).string() + " -> " +
                      h.lexically_relative(src_root).string());
        break;
      }
  }
  return out;
}

bool compiles(const DepFile& d, const fs::path& source) {
  return std::find(d.sources.begin(), d.sources.end(), source) != d.sources.end();
}

fs::path source_root() { return fs::weakly_canonical(fs::path(LLMPORT_SOURCE_DIR)); }
// The build directory: the one holding the llmport binary these tests run.
fs::path build_root() { return fs::weakly_canonical(fs::path(LLMPORT_BIN)).parent_path(); }

TEST(BuildDeps, NoObjectOutsideTheCpuBackendDependsOnACpuHeader) {
  const fs::path src = source_root(), build = build_root();
  const auto deps = dependency_files(build);
  // The check must see the build: the registry's, the CLI's and the factory's objects and
  // the batch that compiles this test.
  int seen = 0;
  for (const DepFile& d : deps)
    seen += compiles(d, src / "src" / "registry" / "validate.cpp") ||
            compiles(d, src / "src" / "cli" / "cmd_kernels.cpp") ||
            compiles(d, src / "src" / "kernels" / "backends.cpp") ||
            compiles(d, src / "tests" / "common" / "cpu_header_deps_test.cpp");
  ASSERT_EQ(seen, 4) << "dependency files of " << build << " not found (" << deps.size() << " read)";
  std::string report;
  for (const std::string& v : violations(deps, src)) report += "  " + v + "\n";
  EXPECT_TRUE(report.empty()) << "objects outside src/kernels/cpu/, src/kernels/backends.cpp and "
                                 "tests/kernels/ depend on cpu backend headers (use "
                                 "llmport/kernels.hpp):\n"
                              << report;
}

// The rule itself, on planted dependency lists: a registry object reaching a cpu header
// through another header is caught; the factory, the backend and its tests are not.
TEST(BuildDeps, RuleFlagsOnlyObjectsOutsideTheBackend) {
  const fs::path src = "/s";
  const fs::path cpu_hdr = src / "src/kernels/cpu/cpu_backend.hpp";
  const std::vector<DepFile> deps = {
      {{src / "src/registry/x.cpp"}, {src / "include/llmport/kernels.hpp", cpu_hdr}},
      {{src / "src/kernels/backends.cpp"}, {cpu_hdr}},
      {{src / "src/kernels/cpu/cpu_backend.cpp"}, {cpu_hdr}},
      {{src / "tests/kernels/cpu_ops_test.cpp", src / "tests/kernels/cpu_linear_test.cpp"}, {cpu_hdr}},
      {{src / "tests/kernels/cpu_ops_test.cpp", src / "tests/verify/faults_test.cpp"}, {cpu_hdr}},
      {{src / "src/kernels/reference/ref.cpp"}, {src / "src/kernels/cpu_like.hpp"}},
  };
  EXPECT_EQ(violations(deps, src),
            (std::vector<std::string>{"src/registry/x.cpp -> src/kernels/cpu/cpu_backend.hpp",
                                      "tests/verify/faults_test.cpp -> src/kernels/cpu/cpu_backend.hpp"}));
  const auto pre = prerequisites("a.o: \\\n ../src/a.cpp /usr/include/x.h \\\n ../src/kernels/cpu/k.hpp\n\n"
                                 "../src/kernels/cpu/k.hpp:\n");
  EXPECT_EQ(pre, (std::vector<std::string>{"../src/a.cpp", "/usr/include/x.h", "../src/kernels/cpu/k.hpp"}));
  EXPECT_EQ(compile_dir_of("/b/tests/CMakeFiles/t.dir/kernels/x.cpp.o.d"), fs::path("/b/tests"));
}

}  // namespace
}  // namespace llmport::test
