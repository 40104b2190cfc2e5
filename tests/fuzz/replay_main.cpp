// A stand-in for libFuzzer's main in builds without it (GCC, LLMPORT_FUZZ=OFF): runs
// LLVMFuzzerTestOneInput once per file named on the command line (directories: each file
// in them), so plain ctest replays the committed regression inputs. Exit 0 when every
// input ran; a crash is the failure.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {
int run_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", p.c_str());
    return 1;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "Running: %s (%zu bytes)\n", p.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  int bad = 0, ran = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (!a.empty() && a[0] == '-') continue;  // libFuzzer flags (e.g. -runs=1) are ignored
    std::filesystem::path p(a);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) {
          bad += run_file(e.path());
          ++ran;
        }
    } else {
      bad += run_file(p);
      ++ran;
    }
  }
  std::fprintf(stderr, "Executed %d inputs\n", ran);
  return bad ? 1 : 0;
}
