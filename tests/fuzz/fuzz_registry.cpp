// Fuzz target: the kernel registry JSON reader (src/registry). The input is one registry
// file (<kernel>_<dtype>.json) in an otherwise empty shipped directory; what loads is
// listed and rendered as supported_kernels.md.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.hpp"
#include "llmport/registry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto dir = [] {
    auto d = llmport::fuzz::work_dir() / "registry";
    std::filesystem::create_directories(d);
    return d;
  }();
  {
    std::ofstream f(dir / "linear_bf16.json", std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    llmport::KernelRegistry reg(dir, std::nullopt);
    auto entries = reg.entries();
    (void)llmport::supported_kernels_markdown(entries);
    for (const auto& e : entries) (void)llmport::to_json(e).dump();
  } catch (const std::exception&) {
  }
  return 0;
}
