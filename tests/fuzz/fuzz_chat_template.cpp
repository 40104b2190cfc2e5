// Fuzz target: chat template parse + render (src/chat). The input is the template source;
// it is rendered with a fixed conversation (system, user, assistant with a tool call, tool)
// and tools. Typed llmport errors only: any other
// exception, a crash, a sanitizer report, a leak, a timeout or an out-of-memory is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_util.hpp"
#include "llmport/chat_template.hpp"
#include "llmport/error.hpp"

namespace {
const nlohmann::ordered_json& messages() {
  static const auto m = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Hi \u00e9 <b>"},
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
    {"role": "tool", "content": "42"},
    {"role": "assistant", "content": "Done.", "reasoning_content": "think"}
  ])");
  return m;
}
const nlohmann::ordered_json& vars() {
  static const auto v = nlohmann::ordered_json::parse(R"({
    "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false,
    "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}]
  })");
  return v;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string src(llmport::fuzz::as_text(data, size));
  try {
    llmport::ChatTemplate t(src);
    // One render per input (the generation prompt from the input's length): a template
    // that runs into a limit costs its time once.
    (void)t.render(messages(), (size & 1) != 0, vars());
  } catch (const llmport::Error&) {
  }
  return 0;
}
