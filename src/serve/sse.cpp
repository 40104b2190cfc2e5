#include "serve/sse.hpp"

namespace llmport::serve {

using json = ResponseJson;

std::string sse_event(const std::string& payload) { return "data: " + payload + "\n\n"; }

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
std::string dump(const ResponseJson& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

json usage(int prompt_tokens, int completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json head(const ResponseHead& h, bool chunk) {
  const bool chat = h.endpoint == Endpoint::Chat;
  return {{"id", h.id},
          {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", h.created},
          {"model", h.model}};
}

}  // namespace

json logprobs_json(Endpoint ep, const std::vector<TokenLogprob>& lps, const std::vector<int>& text_offset) {
  if (ep == Endpoint::Chat) {
    json content = json::array();
    for (const auto& t : lps) {
      json top = json::array();
      for (const auto& a : t.top)
        top.push_back({{"token", a.token}, {"logprob", a.logprob}, {"bytes", bytes_of(a.bytes.value_or(a.token))}});
      content.push_back({{"token", t.token},
                         {"logprob", t.logprob},
                         {"bytes", bytes_of(t.bytes.value_or(t.token))},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top = json::array();
  for (const auto& t : lps) {
    tokens.push_back(t.token);
    token_logprobs.push_back(t.logprob);
    json alt = json::object();
    for (const auto& a : t.top) alt[a.token] = a.logprob;
    top.push_back(alt);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", text_offset}};
}

json completion_body(const ResponseHead& h, const std::string& text, const std::string& finish_reason,
                     const json& logprobs, int prompt_tokens, int completion_tokens) {
  json j = head(h, false);
  json choice = {{"index", 0}};
  if (h.endpoint == Endpoint::Chat) choice["message"] = {{"role", "assistant"}, {"content", text}};
  else choice["text"] = text;
  choice["logprobs"] = logprobs;
  choice["finish_reason"] = finish_reason;
  j["choices"] = json::array({choice});
  j["usage"] = usage(prompt_tokens, completion_tokens);
  return j;
}

json chunk_body(const ResponseHead& h, const std::string& text, const json& logprobs,
                const std::string& finish_reason, bool role) {
  json j = head(h, true);
  json choice = {{"index", 0}};
  if (h.endpoint == Endpoint::Chat) {
    json delta = json::object();
    if (role) delta["role"] = "assistant";
    if (!text.empty() || role || finish_reason.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = logprobs;
  choice["finish_reason"] = finish_reason.empty() ? json(nullptr) : json(finish_reason);
  j["choices"] = json::array({choice});
  return j;
}

json usage_chunk(const ResponseHead& h, int prompt_tokens, int completion_tokens) {
  json j = head(h, true);
  j["choices"] = json::array();
  j["usage"] = usage(prompt_tokens, completion_tokens);
  return j;
}

}  // namespace llmport::serve
