#include "serve/openai_request.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "serve/api_error.hpp"

namespace llmport::serve {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& param, const std::string& what) {
  throw ApiError(400, "'" + param + "': " + what, param);
}

// Optional field: absent and null both mean "not given".
const json* field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

double number(const json& v, const char* name) {
  if (!v.is_number()) bad(name, "expected a number, got " + std::string(v.type_name()));
  const double d = v.get<double>();
  if (!std::isfinite(d)) bad(name, "expected a finite number");
  return d;
}

// An integer field: JSON integers that fit int64 (an unsigned one above INT64_MAX would wrap
// negative), and whole-valued floats below 2^53 (exact); larger magnitudes are out of range,
// not "a fraction".
long long integer(const json& v, const char* name) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<long long>::max())) bad(name, "integer out of range");
    return static_cast<long long>(u);
  }
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d)) {
      if (std::fabs(d) < 9007199254740992.0) return static_cast<long long>(d);
      bad(name, "integer out of range");
    }
  }
  bad(name, "expected an integer, got " + (v.is_number() ? std::string("a fraction") : std::string(v.type_name())));
}

bool boolean(const json& v, const char* name) {
  if (!v.is_boolean()) bad(name, "expected true or false, got " + std::string(v.type_name()));
  return v.get<bool>();
}

int int_in(const json& v, const char* name, long long lo, long long hi) {
  const long long x = integer(v, name);
  if (x < lo || x > hi)
    bad(name, std::to_string(x) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(x);
}

// Message content: a string, or a list of {"type": "text", "text": ...} parts (joined).
std::string content_text(const json& c, const std::string& where) {
  if (c.is_string()) return c.get<std::string>();
  if (c.is_array()) {
    std::string s;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const json& part = c[i];
      // json::value() throws a type_error (a 500, not a 400) for a "type" that is not a string.
      const bool text_type = part.is_object() && (!part.contains("type") || part.at("type") == "text");
      if (!text_type) bad(where, "only text content parts are supported");
      // A text part without its text is malformed, not another kind of part.
      const std::string at = where + "[" + std::to_string(i) + "].text";
      if (!part.contains("text")) bad(at, "missing");
      if (!part.at("text").is_string()) bad(at, "expected a string, got " + std::string(part.at("text").type_name()));
      s += part.at("text").get<std::string>();
    }
    return s;
  }
  bad(where, "expected a string or a list of text parts, got " + std::string(c.type_name()));
}

// OpenAI fields whose effect llmport does not implement: their default values are accepted
// (clients send them: LangChain sends the penalties as 0, some SDKs logit_bias {}), any other
// is refused, as answering without the effect asked for would be wrong without a word.
void refuse_unimplemented(const json& j, bool chat) {
  for (const char* name : {"presence_penalty", "frequency_penalty"})
    if (const json* v = field(j, name); v && number(*v, name) != 0) bad(name, "not supported (only 0)");
  if (const json* v = field(j, "logit_bias")) {
    if (!v->is_object()) bad("logit_bias", "expected an object, got " + std::string(v->type_name()));
    if (!v->empty()) bad("logit_bias", "not supported (only {})");
  }
  if (chat) {
    for (const char* name : {"tools", "functions"})
      if (const json* v = field(j, name); v && !(v->is_array() && v->empty()))
        bad(name, "tool and function calling are not supported");
    for (const char* name : {"tool_choice", "function_call"})
      if (const json* v = field(j, name); v && !(v->is_string() && (*v == "none" || *v == "auto")))
        bad(name, "tool and function calling are not supported (only \"none\" or \"auto\")");
    if (const json* v = field(j, "response_format");
        v && !(v->is_object() && v->contains("type") && v->at("type") == "text"))
      bad("response_format", "only {\"type\": \"text\"} is supported (no JSON mode or schemas)");
  } else {
    if (const json* v = field(j, "best_of"); v && int_in(*v, "best_of", 1, 128) != 1) bad("best_of", "only 1 is supported");
    if (const json* v = field(j, "suffix")) {
      if (!v->is_string()) bad("suffix", "expected a string, got " + std::string(v->type_name()));
      if (!v->get<std::string>().empty()) bad("suffix", "not supported (insertion)");
    }
  }
}

// OpenAI's message roles.
bool known_role(const std::string& role) {
  for (const char* r : {"system", "developer", "user", "assistant", "tool", "function"})
    if (role == r) return true;
  return false;
}

// The parsed document costs far more than its text: an empty object "{}," (3 bytes) is a
// ~100-byte node, so 8 MiB of them took ~580 MB per request and a few concurrent ones
// could get the server killed. Counted by a SAX pass that builds nothing, refused past the
// limits (no request llmport serves comes near: a message is one object, a token id one
// value), then parsed. Not nlohmann's parser callback: its end_object scans the parent
// container for a discarded child, quadratic in a flat array of objects (65536 "{}" cost
// 2e9 steps, seconds of server CPU per request).
class CountingSax : public nlohmann::json_sax<json> {
 public:
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return container(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return container(); }
  bool end_array() override { return true; }
  // The DOM parse that follows throws the same error with nlohmann's message.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool value() {
    if (++values_ > kMaxJsonValues)
      throw ApiError(413, "request body: more than " + std::to_string(kMaxJsonValues) + " JSON values");
    return true;
  }
  bool container() {
    if (++containers_ > kMaxJsonContainers)
      throw ApiError(413, "request body: more than " + std::to_string(kMaxJsonContainers) +
                              " JSON objects and arrays");
    return true;
  }
  long values_ = 0, containers_ = 0;
};

json parse_bounded(const std::string& body) {
  CountingSax counter;
  json::sax_parse(body, &counter);
  return json::parse(body);
}

}  // namespace

GenerationRequest parse_request(const std::string& body, Endpoint endpoint) {
  json j;
  try {
    j = parse_bounded(body);
  } catch (const json::parse_error& e) {
    throw ApiError(400, "malformed JSON body: " + json_error_text(e, /*with_line=*/false));
  } catch (const json::exception& e) {  // out_of_range.406 for 1e999
    throw ApiError(400, "malformed JSON body: " + json_error_text(e));
  }
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object");
  GenerationRequest r;
  r.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::Chat;

  if (chat) {
    const json* m = field(j, "messages");
    if (!m) bad("messages", "required");
    if (!m->is_array() || m->empty()) bad("messages", "expected a non-empty list of messages");
    r.messages = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < m->size(); ++i) {
      const json& msg = (*m)[i];
      const std::string where = "messages[" + std::to_string(i) + "]";
      if (!msg.is_object()) bad(where, "expected an object");
      if (!msg.contains("role") || !msg.at("role").is_string()) bad(where + ".role", "expected a string");
      // A chat template renders the roles it knows and may drop any other without a word
      // (Qwen3's does): the message would be left out of the prompt silently.
      const std::string role = msg.at("role").get<std::string>();
      if (!known_role(role))
        bad(where + ".role", "unknown role '" + printable(role) +
                                 "' (expected system, developer, user, assistant, tool or function)");
      // OpenAI requires content of every role but an assistant turn (which may carry only
      // tool calls); a user turn without it would render as an empty turn, silently.
      std::string content;
      if (const json* c = field(msg, "content")) content = content_text(*c, where + ".content");
      else if (role != "assistant") bad(where + ".content", "required for role '" + role + "'");
      r.messages.push_back({{"role", msg.at("role").get<std::string>()}, {"content", content}});
    }
  } else {
    const json* p = field(j, "prompt");
    if (!p) bad("prompt", "required");
    if (p->is_string()) {
      r.prompt_text = p->get<std::string>();
    } else if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
      std::vector<int> ids;
      for (const auto& v : *p) ids.push_back(int_in(v, "prompt", 0, std::numeric_limits<int>::max()));
      r.prompt_ids = std::move(ids);
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.prompt_text = (*p)[0].get<std::string>();
    } else {
      bad("prompt", "expected a string, a list of token ids or a list of one string");
    }
    if (const json* e = field(j, "echo"); e && boolean(*e, "echo")) bad("echo", "only false is supported");
  }

  if (const json* n = field(j, "n"); n && int_in(*n, "n", 1, 128) != 1) bad("n", "only n = 1 is supported");
  refuse_unimplemented(j, chat);
  // Chat: max_completion_tokens replaces the deprecated max_tokens and wins when both are
  // given (as vLLM's `max_completion_tokens or max_tokens`).
  const char* mt_name = "max_tokens";
  const json* mt = field(j, "max_tokens");
  if (const json* mct = chat ? field(j, "max_completion_tokens") : nullptr) {
    mt = mct;
    mt_name = "max_completion_tokens";
  }
  if (mt) r.max_tokens = int_in(*mt, mt_name, 1, std::numeric_limits<int>::max());

  r.sampling.temperature = 1.0;  // OpenAI's default (0 = greedy)
  if (const json* t = field(j, "temperature")) {
    r.sampling.temperature = number(*t, "temperature");
    if (r.sampling.temperature < 0 || r.sampling.temperature > 2) bad("temperature", "must be in [0, 2]");
  }
  if (const json* t = field(j, "top_p")) {
    r.sampling.top_p = number(*t, "top_p");
    if (!(r.sampling.top_p > 0 && r.sampling.top_p <= 1)) bad("top_p", "must be in (0, 1]");
  }
  if (const json* t = field(j, "top_k")) r.sampling.top_k = int_in(*t, "top_k", 0, std::numeric_limits<int>::max());
  if (const json* t = field(j, "min_p")) {
    r.sampling.min_p = number(*t, "min_p");
    if (r.sampling.min_p < 0 || r.sampling.min_p > 1) bad("min_p", "must be in [0, 1]");
  }
  if (const json* t = field(j, "seed")) {
    r.sampling.seed = static_cast<uint64_t>(integer(*t, "seed"));
    r.seeded = true;
  }
  if (const json* s = field(j, "stop")) {
    if (s->is_string()) {
      r.stop.push_back(s->get<std::string>());
    } else if (s->is_array()) {
      for (const auto& v : *s) {
        if (!v.is_string()) bad("stop", "expected a string or a list of strings");
        r.stop.push_back(v.get<std::string>());
      }
    } else {
      bad("stop", "expected a string or a list of strings, got " + std::string(s->type_name()));
    }
    if (r.stop.size() > 16) bad("stop", "at most 16 stop strings");
    for (const auto& s1 : r.stop)
      if (s1.empty()) bad("stop", "stop strings must not be empty");
  }
  if (const json* s = field(j, "stream")) r.stream = boolean(*s, "stream");
  if (const json* so = field(j, "stream_options")) {
    if (!so->is_object()) bad("stream_options", "expected an object");
    if (const json* u = field(*so, "include_usage")) r.include_usage = boolean(*u, "stream_options.include_usage");
    // OpenAI refuses it too: include_usage would silently do nothing on a whole answer.
    if (!r.stream) bad("stream_options", "only allowed when 'stream' is true");
  }
  if (chat) {
    if (const json* l = field(j, "logprobs")) r.logprobs = boolean(*l, "logprobs");
    if (const json* t = field(j, "top_logprobs")) {
      r.top_logprobs = int_in(*t, "top_logprobs", 0, 20);
      if (!r.logprobs && r.top_logprobs > 0) bad("top_logprobs", "needs logprobs: true");
    }
  } else if (const json* l = field(j, "logprobs")) {
    r.top_logprobs = int_in(*l, "logprobs", 0, 20);
    r.logprobs = true;
  }
  try {
    r.sampling.validate();
  } catch (const UsageError& e) {
    throw ApiError(400, e.what());
  }
  return r;
}

int token_budget(const GenerationRequest& r, int n_prompt, int context) {
  if (n_prompt > context)
    throw ApiError(400, "the prompt is " + std::to_string(n_prompt) +
                            " tokens, longer than the context of " + std::to_string(context) + " tokens",
                   r.endpoint == Endpoint::Chat ? "messages" : "prompt", "context_length_exceeded");
  if (r.max_tokens) {
    const long long need = static_cast<long long>(n_prompt) + *r.max_tokens - 1;
    if (need > context)
      throw ApiError(400, "prompt (" + std::to_string(n_prompt) + " tokens) + max_tokens " +
                              std::to_string(*r.max_tokens) + " - 1 = " + std::to_string(need) +
                              " exceed the context of " + std::to_string(context) + " tokens",
                     "max_tokens", "context_length_exceeded");
    return *r.max_tokens;
  }
  const int rest = context - n_prompt + 1;
  return r.endpoint == Endpoint::Chat ? rest : std::min(16, rest);
}

}  // namespace llmport::serve
