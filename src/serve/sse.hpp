#pragma once
// Server-sent events and the OpenAI response bodies (completion, chat completion, their
// stream chunks), one place for the field-for-field shapes.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/openai_request.hpp"

namespace llmport::serve {

/// `data: <payload>\n\n`.
std::string sse_event(const std::string& payload);

/// Response bodies keep their fields in the order they are written, as OpenAI's do:
/// `top_logprobs` from the most probable alternative down (a sorted map listed them by
/// token text), `id` first.
using ResponseJson = nlohmann::ordered_json;

/// JSON text; invalid UTF-8 (a byte-fallback token's string) is replaced, never thrown.
std::string dump(const nlohmann::json& j);
std::string dump(const ResponseJson& j);

/// Identity of one response: id ("cmpl-" / "chatcmpl-" and 24 hex digits, unique across processes), created (unix s), model.
struct ResponseHead {
  Endpoint endpoint = Endpoint::Completions;
  std::string id;
  long long created = 0;
  std::string model;
};

/// One alternative of a token: its text, log-probability and raw bytes (nullopt: its text's).
struct TopLogprob {
  std::string token;
  float logprob = 0;
  std::optional<std::string> bytes;
};

/// One token's logprobs as the client reads them (token strings already decoded). `bytes`:
/// the token's raw bytes where the tokenizer maps it to bytes (Tokenizer::token_bytes: half a
/// UTF-8 character is its own bytes, while `token` holds the text the token adds), else
/// nullopt (chat's `bytes` are then the text's).
struct TokenLogprob {
  std::string token;
  float logprob = 0;
  std::vector<TopLogprob> top;
  std::optional<std::string> bytes;
};

/// `logprobs` of a choice: completions {tokens, token_logprobs, top_logprobs, text_offset},
/// chat {content: [{token, logprob, bytes, top_logprobs}]}. text_offset: offset of each
/// token's text in the completion (completions only).
ResponseJson logprobs_json(Endpoint ep, const std::vector<TokenLogprob>& lps,
                             const std::vector<int>& text_offset);

/// The non-streamed response.
ResponseJson completion_body(const ResponseHead& h, const std::string& text, const std::string& finish_reason,
                             const ResponseJson& logprobs, int prompt_tokens, int completion_tokens);
/// A stream chunk: text / delta (role "assistant" on the first chat chunk when `role`),
/// finish_reason null unless given.
ResponseJson chunk_body(const ResponseHead& h, const std::string& text, const ResponseJson& logprobs,
                        const std::string& finish_reason, bool role = false);
/// The stream's usage chunk (choices: []).
ResponseJson usage_chunk(const ResponseHead& h, int prompt_tokens, int completion_tokens);

}  // namespace llmport::serve
