// Fuzz target: the records / golden reader (src/verify: llmport-records/1, stories golden,
// synthetic golden). The input is the record JSON file; a side file it names is absent
// (the reader must say so).
#include <cstddef>
#include <cstdint>

#include "fuzz_util.hpp"
#include "llmport/records.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto p = llmport::fuzz::put_file("records.json", llmport::fuzz::as_text(data, size));
  try {
    auto rf = llmport::read_record_file(p);
    std::size_t n = 0;
    for (const auto& s : rf.sequences) n += s.steps.size();
    (void)n;
  } catch (const std::exception&) {
  }
  return 0;
}
