// Fuzz target: the OpenAI request bodies `llmport serve` parses (src/serve/openai_request).
// The input is an HTTP body, tried as both endpoints, then the token budget of the parsed
// request at a few prompt lengths. Expected answer: ApiError (a 400 in OpenAI's shape);
// any other exception, a crash or a hang is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.hpp"
#include "serve/api_error.hpp"
#include "serve/openai_request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace llmport::serve;
  const std::string body(llmport::fuzz::as_text(data, size));
  for (Endpoint ep : {Endpoint::Completions, Endpoint::Chat}) {
    try {
      const GenerationRequest r = parse_request(body, ep);
      for (int n_prompt : {0, 1, 100, 4096}) {
        try {
          (void)token_budget(r, n_prompt, 4096);
        } catch (const ApiError&) {
        }
      }
    } catch (const ApiError&) {
    }
  }
  return 0;
}
