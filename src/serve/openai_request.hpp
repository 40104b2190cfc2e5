#pragma once
// Parsing and validation of the OpenAI request bodies of /v1/completions and
// /v1/chat/completions (the fields llmport implements; unknown fields are ignored; OpenAI
// fields whose effect is not implemented are accepted at their defaults only).
// Every problem is an ApiError 400 naming the field (`param`).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/sampler.hpp"

namespace llmport::serve {

enum class Endpoint { Completions, Chat };

/// A validated request. Exactly one of prompt_text / prompt_ids / messages is set.
struct GenerationRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::optional<std::string> prompt_text;   ///< completions: encoded as `run` does
  std::optional<std::vector<int>> prompt_ids;  ///< completions: token ids as given
  nlohmann::ordered_json messages;          ///< chat: [{role, content: string}, ...]
  std::optional<int> max_tokens;            ///< as given (>= 1); default by endpoint
  SamplingParams sampling;                  ///< temperature default 1 (OpenAI)
  bool seeded = false;                      ///< `seed` given (else a random seed)
  std::vector<std::string> stop;            ///< stop strings (not returned)
  bool stream = false;
  bool include_usage = false;               ///< stream_options.include_usage
  bool logprobs = false;                    ///< return the chosen tokens' logprobs
  int top_logprobs = 0;                     ///< and this many alternatives per token
};

/// Most objects and arrays, and most scalar values (strings, numbers, booleans, nulls), a
/// request body may hold: its parsed form is bounded by these, not only its bytes by --max-body.
inline constexpr long kMaxJsonContainers = 1L << 16;
inline constexpr long kMaxJsonValues = 1L << 20;

/// Parses a request body. Throws ApiError(400) for malformed JSON, a wrong type, a value
/// out of range, n != 1 or echo true; ApiError(413) past kMaxJsonContainers or
/// kMaxJsonValues.
GenerationRequest parse_request(const std::string& body, Endpoint endpoint);

/// The token budget of a request with n_prompt prompt tokens in a slot of `context` tokens:
/// max_tokens when given (n_prompt + max_tokens - 1 beyond the context: ApiError 400 naming
/// the numbers, the rule of `llmport run`), else 16 for completions (OpenAI's default) and
/// the rest of the context for chat. Also 400 when the prompt alone does not fit.
int token_budget(const GenerationRequest& r, int n_prompt, int context);

}  // namespace llmport::serve
