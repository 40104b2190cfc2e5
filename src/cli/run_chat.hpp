#pragma once
// The interactive multi-turn chat of `llmport run --chat` (the one-turn instruct prompt
// is llmport::instruct_prompt_ids in llmport/chat_template.hpp).
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/engine.hpp"
#include "llmport/sampler.hpp"
#include "llmport/tokenizer.hpp"

namespace llmport::cli {

struct ChatOptions {
  std::string system;         ///< system message ("" = none)
  int max_new_tokens = 256;   ///< per answer (clamped to the room left in the context)
  SamplingParams sampling;
  std::vector<int> stop_ids;  ///< end-of-turn ids (not printed)
};

/// Interactive chat: reads one user message per line from `in` until EOF (Ctrl-D),
/// streams each answer to `out` token by token, keeps the conversation as history within
/// the engine's context (oldest turns dropped when it would not fit; the KV cache keeps
/// the common prefix between turns), `/reset` starts over. Prints "> " before each
/// message when `prompt_marker`. Problems with one message (too long) go to `err` and the
/// chat continues. Returns the exit code (0).
int run_chat_loop(Engine& engine, const Tokenizer& tok, const ChatOptions& opt, std::istream& in, std::ostream& out,
                  std::ostream& err, bool prompt_marker);

}  // namespace llmport::cli
