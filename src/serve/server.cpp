// `llmport serve`: the HTTP side (cpp-httplib) of the OpenAI-compatible server. Routes,
// authentication, admission (429), the request -> GenerationParams path, streamed and
// whole responses, graceful shutdown. The engine work is the Scheduler's
// (serve/scheduler.hpp).
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string_view>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "chat/ustr.hpp"
#include "llmport/chat_template.hpp"
#include "llmport/file_io.hpp"
#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/model_config.hpp"
#include "llmport/quant_plan.hpp"
#include "llmport/serve.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/weights.hpp"
#include "serve/api_error.hpp"
#include "serve/chat_prompt.hpp"
#include "serve/connection.hpp"
#include "serve/connection_pool.hpp"
#include "serve/http_connection.hpp"
#include "serve/metrics.hpp"
#include "serve/openai_request.hpp"
#include "serve/scheduler.hpp"
#include "serve/sse.hpp"
#include "serve/text_stream.hpp"

namespace llmport {
namespace serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

enum class State : int { Loading, Ready, Draining };

const char* kRoutes[][2] = {{"GET", "/health"},
                            {"GET", "/metrics"},
                            {"GET", "/v1/models"},
                            {"POST", "/v1/completions"},
                            {"POST", "/v1/chat/completions"}};

/// GET /v1/models/{model} (OpenAI's "retrieve model"; the SDKs' models.retrieve).
constexpr char kModelPrefix[] = "/v1/models/";

std::string route_label(const std::string& path) {
  for (const auto& r : kRoutes)
    if (path == r[1]) return r[1];
  if (path.size() > sizeof kModelPrefix - 1 && path.rfind(kModelPrefix, 0) == 0) return "/v1/models/{model}";
  return "other";
}

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& param = "",
                const std::string& code = "") {
  res.status = status;
  res.set_content(dump(error_body(status, message, param, code)), "application/json");
}

// Answers with "Connection: close" (and no Keep-Alive header) and ends the connection once
// the response is written (the connection loop's lingering close), when the request's body
// is left unread or the stream is at an unknown point. cpp-httplib 0.11 decides the header
// from the request's Connection header when it writes the response; the Request is httplib's
// own non-const object, so writing it here is defined.
void close_after_response(const httplib::Request& req) {
  auto& r = const_cast<httplib::Request&>(req);
  r.headers.erase("Connection");
  r.headers.emplace("Connection", "close");
  close_connection_after_response();
}

// A Transfer-Encoding or Content-Length header line with an empty value: httplib 0.11 drops
// such a line, so the request would be read as having no body (a chunked body left on the
// connection as the next request). Seen in the raw header section; "" if none.
std::string empty_framing_header() {
  const RequestReading* r = current_request();
  if (!r) return "";
  for (const auto& v : raw_header_values(r->raw_head, "Transfer-Encoding"))
    if (v.empty()) return "unsupported Transfer-Encoding '' (only 'chunked', in lowercase, is read)";
  for (const auto& v : raw_header_values(r->raw_head, "Content-Length"))
    if (v.empty()) return "malformed Content-Length header (not a decimal number)";
  return "";
}

// A header section RFC 9112 says to answer 400 (seen raw, as httplib accepts these); "" if fine:
//  - obs-fold, NUL / CR / bare LF, whitespace before a colon (header_syntax_error);
//  - an HTTP/1.1 request without exactly one Host header (3.2);
//  - more than one Authorization header.
std::string head_error(const httplib::Request& req) {
  const RequestReading* r = current_request();
  if (!r) return "";
  if (std::string bad = header_syntax_error(r->raw_head); !bad.empty()) return bad;
  if (req.version == "HTTP/1.1") {
    const std::size_t hosts = raw_header_values(r->raw_head, "Host").size();
    if (hosts != 1)
      return "an HTTP/1.1 request needs exactly one Host header (got " + std::to_string(hosts) + ")";
  }
  // RFC 9110 5.3 / 11.6.2: Authorization is not a list field, so two of them are malformed.
  // httplib reads the first; a proxy in front may check the last, and the two would disagree
  // on who is authorized. Counted raw, as httplib drops an empty-valued line.
  const std::size_t auths = raw_header_values(r->raw_head, "Authorization").size();
  if (auths > 1)
    return "more than one Authorization header (got " + std::to_string(auths) + "): send exactly one";
  return "";
}

// Whether an Authorization value carries `key` as Bearer credentials. RFC 9110 11.1/11.4:
// credentials = auth-scheme 1*SP token68, the scheme case-insensitive ("bearer KEY" is as
// valid as "Bearer KEY"); the key itself is compared exactly.
bool bearer_key_matches(const std::string& value, const std::string& key) {
  constexpr std::string_view scheme = "bearer";
  if (value.size() <= scheme.size() || value[scheme.size()] != ' ') return false;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(value[i])) != scheme[i]) return false;
  const std::size_t start = value.find_first_not_of(' ', scheme.size());
  return start != std::string::npos && value.compare(start, std::string::npos, key) == 0;
}

// A body framing this server does not read (RFC 9112 6.1-6.3); "" if fine:
//  - a Transfer-Encoding other than exactly "chunked". Transfer codings are case-insensitive,
//    but cpp-httplib 0.11 reads a body as chunked only for the lowercase value: "Chunked" would
//    leave the chunks unread on the connection, to be parsed as the next request. Refused, as
//    is more than one Transfer-Encoding header (httplib reads only the first);
//  - Transfer-Encoding together with Content-Length (a request-smuggling shape);
//  - Content-Length headers with different values (httplib would read the first);
//  - an empty Transfer-Encoding or Content-Length (empty_framing_header).
std::string framing_error(const httplib::Request& req) {
  if (std::string empty = empty_framing_header(); !empty.empty()) return empty;
  const std::size_t n_len = req.get_header_value_count("Content-Length");
  for (std::size_t i = 1; i < n_len; ++i)
    if (req.get_header_value("Content-Length", i) != req.get_header_value("Content-Length", 0))
      return "conflicting Content-Length headers ('" + printable(req.get_header_value("Content-Length", 0)) +
             "' and '" + printable(req.get_header_value("Content-Length", i)) + "')";
  if (!req.has_header("Transfer-Encoding")) return "";
  if (req.get_header_value_count("Transfer-Encoding") > 1)
    return "more than one Transfer-Encoding header (only a single 'Transfer-Encoding: chunked' is read)";
  const std::string te = req.get_header_value("Transfer-Encoding");
  if (te != "chunked")
    return "unsupported Transfer-Encoding '" + printable(te) + "' (only 'chunked', in lowercase, is read)";
  if (n_len > 0) return "both Content-Length and Transfer-Encoding: chunked";
  return "";
}

// A chunked body, or a Content-Length other than 0.
bool has_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") ||
         (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

// A compressed body (Content-Encoding other than identity): this server reads JSON as sent,
// so the client is told the encoding is the problem (415) rather than "could not read".
std::string content_encoding_error(const httplib::Request& req) {
  if (!has_body(req)) return "";
  // Every coding of every Content-Encoding header (a list field, RFC 9110 8.4; coding names
  // are case-insensitive): only identity leaves the body as sent.
  for (std::size_t i = 0; i < req.get_header_value_count("Content-Encoding"); ++i) {
    const std::string ce = req.get_header_value("Content-Encoding", i);
    std::size_t p = 0;
    while (p <= ce.size()) {
      const std::size_t e = std::min(ce.find(',', p), ce.size());
      std::string coding = ce.substr(p, e - p);
      coding.erase(0, coding.find_first_not_of(" \t"));
      coding.erase(coding.find_last_not_of(" \t") + 1);
      for (char& c : coding) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!coding.empty() && coding != "identity")
        return "unsupported Content-Encoding '" + printable(ce) + "': send the request body uncompressed";
      p = e + 1;
    }
  }
  return "";
}

// A request with a body (a chunked one, or a Content-Length other than 0) that httplib 0.11
// does not read: its method is none of POST, PUT, PATCH, DELETE (httplib's expect_content).
bool body_left_unread(const httplib::Request& req) {
  for (const char* m : {"POST", "PUT", "PATCH", "DELETE"})
    if (req.method == m) return false;
  return has_body(req);
}

// The text of --chat-template-file. A directory, an unreadable file or one with no template
// text is refused at startup (UsageError, exit 2): read as "no template", the server would
// start and answer every chat request "this model has no chat template".
std::string read_chat_template_file(const std::filesystem::path& file) {
  std::string text;
  try {
    text = read_text_file(file, 16ull << 20);
  } catch (const Error& e) {
    throw UsageError(std::string("--chat-template-file ") + e.what());
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw UsageError("--chat-template-file " + file.string() + ": empty file (expected a Jinja chat template)");
  return text;
}

// 413 for a declared Content-Length over `limit`, 400 for one that is not a decimal number
// (RFC 9110 8.6), 0 otherwise (no header, or within the limit).
int declared_length_status(const httplib::Request& req, std::size_t limit) {
  if (!req.has_header("Content-Length")) return 0;
  const std::string v = req.get_header_value("Content-Length");
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec == std::errc::result_out_of_range) return 413;
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return 400;
  return n > limit ? 413 : 0;
}

// Bytes of weights the server will hold (estimate from the config; a quantized engine's
// from its quantization plan).
std::size_t weight_bytes_estimate(const ModelConfig& c, DType dt, QuantType quant, QuantType lm_head) {
  if (quant != QuantType::None) {
    std::size_t b = 0;
    for (const auto& m : plan_quantization(c, dt, quant, lm_head).matrices) b += m.bytes;
    return b;
  }
  const std::size_t emb = static_cast<std::size_t>(c.emb_dim);
  const std::size_t q = static_cast<std::size_t>(c.n_heads) * c.head_dim;
  const std::size_t kv = static_cast<std::size_t>(c.n_kv_heads) * c.head_dim;
  const std::size_t per_layer = emb * q * 2 + emb * kv * 2 + 3 * emb * static_cast<std::size_t>(c.hidden_dim);
  const std::size_t table = static_cast<std::size_t>(c.vocab_size) * emb * (c.tie_word_embeddings ? 1 : 2);
  return (per_layer * static_cast<std::size_t>(c.n_layers) + table) * dtype_size(dt);
}

std::size_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::size_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;  // unknown: no check
}

// Token pieces -> client text: incremental detokenization, UTF-8 holdback, stop strings.
class TextPipe {
 public:
  /// The prompt goes through the decoder first (its text is not returned), as `llmport run`
  /// does: a continuation's leading space is then kept (the decoder strips it only once).
  TextPipe(const Tokenizer* tok, const std::vector<int>& prompt, std::vector<std::string> stops)
      : stop_(std::move(stops)) {
    if (!tok) return;
    dec_.emplace(*tok, /*skip_special_tokens=*/true);
    (void)dec_->seed(prompt);
  }
  std::string push(int id) {
    raw_ = dec_ ? dec_->push(id) : std::string();
    return stop_.push(utf8_.push(raw_));
  }
  /// The text the last push decoded, before UTF-8 holdback and stop strings: that token's
  /// own text (a token that is part of a character adds nothing, the next one all of it).
  const std::string& last_text() const { return raw_; }
  /// The rest at the end of a generation that did not stop on a string.
  std::string finish() {
    std::string out = stop_.push(utf8_.push(dec_ ? dec_->flush() : std::string()));
    if (!utf8_.flush().empty()) out += stop_.push("\xEF\xBF\xBD");  // an incomplete tail
    return out + stop_.flush();
  }
  bool stopped() const { return stop_.stopped(); }

 private:
  std::optional<IncrementalDecoder> dec_;
  std::string raw_;
  Utf8Holdback utf8_;
  StopMatcher stop_;
};

class Server {
 public:
  Server(std::filesystem::path dir, const ServeOptions& opt) : dir_(std::move(dir)), opt_(opt) {}

  int run() {
    check_options();
    cfg_ = load_model_config(dir_);
    const int model_ctx = cfg_.max_seq > 0 ? cfg_.max_seq : cfg_.max_position_embeddings;
    slot_ctx_ = opt_.ctx_size / opt_.parallel;
    if (model_ctx > 0 && slot_ctx_ > model_ctx && !opt_.ctx_size_given) slot_ctx_ = model_ctx;
    if (model_ctx > 0 && slot_ctx_ > model_ctx) {
      // llama-server's rule: a slot never holds more positions than the model was made for
      // (RoPE beyond it is untrained); said, not silent.
      std::cerr << "warning: --ctx-size " << opt_.ctx_size << " over --parallel " << opt_.parallel << " is "
                << slot_ctx_ << " tokens per slot, above the model's context of " << model_ctx
                << ": each slot holds " << model_ctx << " tokens" << std::endl;
      slot_ctx_ = model_ctx;
    }
    if (slot_ctx_ < 2)
      throw UsageError("--ctx-size " + std::to_string(opt_.ctx_size) + " over --parallel " +
                       std::to_string(opt_.parallel) + " leaves " + std::to_string(slot_ctx_) +
                       " tokens per slot (need at least 2)");
    const std::filesystem::path mdir = cfg_.dir.empty() ? dir_ : cfg_.dir;
    if (Tokenizer::exists(mdir)) tok_ = Tokenizer::load(mdir);
    if (tok_) warn_tokenizer_disagreements(*tok_, std::cerr);
    warn_unrun_model_settings(mdir, std::cerr);
    if (!opt_.chat_template_file.empty()) {
      chat_template_ = read_chat_template_file(opt_.chat_template_file);
    } else if (tok_) {
      chat_template_ = tok_->chat_template();
    }
    template_origin_ = !opt_.chat_template_file.empty() ? opt_.chat_template_file.string()
                       : tok_                             ? tok_->chat_template_origin()
                                                          : std::string();
    if (!chat_template_.empty()) template_ = std::make_unique<ChatTemplate>(chat_template_, template_origin_);
    model_name_ = !opt_.model_name.empty() ? opt_.model_name : dir_.filename().string();
    if (model_name_.empty() || model_name_ == ".") model_name_ = std::filesystem::absolute(dir_).parent_path().filename().string();

    // Weights + KV beyond the memory available now: refuse before binding (exit 2).
    // (dtype: the option, else config torch_dtype, else bf16: the weights are not open yet)
    DType dt = DType::BF16;
    if (opt_.dtype) {
      dt = *opt_.dtype;
    } else if (!cfg_.torch_dtype.empty()) {
      try {
        dt = parse_dtype(cfg_.torch_dtype);
      } catch (const UsageError&) {
      }
    }
    const std::size_t kv = static_cast<std::size_t>(opt_.parallel) * cfg_.n_layers * cfg_.n_kv_heads *
                           (static_cast<std::size_t>(slot_ctx_) + 1) * cfg_.head_dim * 2 * sizeof(float);
    const std::size_t w = weight_bytes_estimate(cfg_, dt, opt_.quant, opt_.quant_lm_head);
    if (const std::size_t avail = mem_available_bytes(); avail > 0 && w + kv > avail)
      throw UsageError("weights (" + std::to_string(w >> 20) + " MiB) + KV cache (" + std::to_string(kv >> 20) +
                       " MiB for --parallel " + std::to_string(opt_.parallel) + " x " + std::to_string(slot_ctx_) +
                       " tokens) exceed the available memory (" + std::to_string(avail >> 20) +
                       " MiB): lower --ctx-size or --parallel");
    weights_ = std::make_unique<WeightStore>(WeightStore::open(mdir, cfg_));
    for (const auto& wm : weights_->warnings()) std::cerr << "warning: " << printable(wm) << "\n";

    // SIGINT / SIGTERM are taken by sigwait below: block them before any thread starts.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    setup_routes();
    int port = opt_.port;
    if (port == 0) {
      port = http_.bind_to_any_port(opt_.host);
      if (port < 0) throw UsageError("cannot bind " + opt_.host + " on any port");
    } else if (!http_.bind_to_port(opt_.host, port)) {
      throw UsageError("cannot bind " + opt_.host + ":" + std::to_string(port) +
                       ": the port is in use or the address is not one of this machine's");
    }
    http_.widen_listen_backlog();
    // An IPv6 literal is bracketed in a URL (RFC 3986 3.2.2): "http://::1:8080" is no URL.
    const bool v6 = opt_.host.find(':') != std::string::npos;
    std::cout << "listening on http://" << (v6 ? "[" + opt_.host + "]" : opt_.host) << ":" << port << std::endl;
    std::atomic<bool> listen_returned{false};
    std::thread http_thread([this, &listen_returned] {
      http_.listen_after_bind();
      listen_returned = true;
    });
    // httplib's stop() only shuts a listener that is already running: one that starts just
    // after it would accept forever and the join below would never return (a load error
    // then hung the server, deaf to SIGTERM). Wait for the loop first (or for its return).
    auto stop_http = [&] {
      for (int i = 0; i < 10000 && !http_.is_running() && !listen_returned; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      http_.stop();
      http_thread.join();
    };

    try {
      EngineOptions eo;
      eo.dtype = opt_.dtype;
      eo.quant = opt_.quant;
      eo.quant_lm_head = opt_.quant_lm_head;
      eo.threads = opt_.threads;
      eo.kernels = opt_.kernels;
      eo.max_seq = slot_ctx_;
      eo.n_slots = opt_.parallel;
      eo.batch_invariant = true;
      engine_ = std::make_unique<Engine>(cfg_, *weights_, eo);
      scheduler_ = std::make_unique<Scheduler>(*engine_, opt_.queue, opt_.prefill_chunk, metrics_,
                                               opt_.test_step_delay_ms);
    } catch (...) {
      stop_http();
      throw;
    }
    state_.store(State::Ready);
    std::cerr << "model loaded: " << model_name_ << " (" << opt_.parallel << (opt_.parallel == 1 ? " slot x " : " slots x ") << slot_ctx_
              << " tokens, " << precision_name(engine_->dtype(), engine_->quant())
              << (engine_->quant_lm_head() == QuantType::None ? "" : ", lm_head " + std::string(quant_name(engine_->quant_lm_head())))
              << ")" << std::endl;

    int sig = 0;
    sigwait(&sigs, &sig);
    std::cerr << "signal " << sig << ": draining (" << opt_.shutdown_grace_s << " s grace)" << std::endl;
    state_.store(State::Draining);
    // A request still waiting for a slot would only start to be cut by the end of the grace:
    // it is answered 503 now, so that a balancer retries it on another replica.
    scheduler_->cancel_queued();
    const auto deadline = Clock::now() + std::chrono::duration<double>(opt_.shutdown_grace_s);
    // In-flight: generation requests not yet answered in full (streams until their releaser).
    // A second SIGINT/SIGTERM ends the grace at once (Ctrl-C twice).
    const timespec tick{0, 20'000'000};
    while (Clock::now() < deadline && inflight_.load() > 0) {
      if (sigtimedwait(&sigs, nullptr, &tick) > 0) {
        std::cerr << "second signal: cancelling what is left" << std::endl;
        break;
      }
    }
    scheduler_->stop();  // cancels what is left; their handlers answer 503
    const auto hard = Clock::now() + std::chrono::seconds(2);
    while (Clock::now() < hard && inflight_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop_http();
    return kExitOk;
  }

 private:
  void check_options() const {
    if (opt_.parallel < 1 || opt_.parallel > 256) throw UsageError("--parallel must be in [1, 256]");
    if (opt_.queue < 0 || opt_.queue > 4096) throw UsageError("--queue must be in [0, 4096]");
    if (opt_.ctx_size < 1) throw UsageError("--ctx-size must be at least 1");
    if (opt_.port < 0 || opt_.port > 65535) throw UsageError("--port must be in [0, 65535]");
    if (opt_.max_connections != 0 && opt_.max_connections < opt_.parallel + opt_.queue)
      throw UsageError("--max-connections " + std::to_string(opt_.max_connections) + " is below --parallel + --queue (" +
                       std::to_string(opt_.parallel + opt_.queue) + "): admitted requests need their connections");
  }

  int max_connections() const {
    return opt_.max_connections != 0 ? opt_.max_connections : opt_.parallel + opt_.queue + kIdleConnections;
  }
  /// Connections beyond the admitted requests by default, for idle and slow clients.
  static constexpr int kIdleConnections = 64;

  // A request this server will not read on (a malformed header section, a body framing it
  // does not support, a Content-Length over the limit or not a number): `res` holds the
  // error, the connection closes after it; true.
  bool refuse_unread_body(const httplib::Request& req, httplib::Response& res) {
    if (const std::string bad = head_error(req); !bad.empty()) {
      send_error(res, 400, bad);
    } else if (const std::string bad2 = framing_error(req); !bad2.empty()) {
      send_error(res, 400, bad2);
    } else if (const std::string bad3 = content_encoding_error(req); !bad3.empty()) {
      send_error(res, 415, bad3);
    } else if (const int st = declared_length_status(req, opt_.max_body_bytes)) {
      send_error(res, st, st == 413 ? over_limit_message()
                                    : std::string("malformed Content-Length header (not a decimal number)"));
    } else {
      return false;
    }
    close_after_response(req);
    return true;
  }

  void setup_routes() {
    // One thread per connection (httplib's model); idle threads cost little, so beyond the
    // parallel + queue requests admission lets in there is room for many idle and slow
    // clients, and past the limit the pool ends the one waiting longest or answers 503
    // (serve/connection_pool.hpp), so a request sent at once never waits behind them.
    http_.set_max_connections(static_cast<std::size_t>(max_connections()));
    // SO_REUSEADDR only: a restarted server binds while its old connections sit in
    // TIME_WAIT. httplib's default adds SO_REUSEPORT, which lets a second server bind the
    // same port and silently take half of its connections.
    http_.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    http_.set_payload_max_length(opt_.max_body_bytes);
    // A request head (line, headers) must arrive whole within read_timeout_s of its first
    // byte, each body byte within read_timeout_s of the last (the connection loop): else
    // 408 and the connection ends.
    http_.set_read_timeout(opt_.read_timeout_s, 0);
    http_.set_write_timeout(30, 0);
    http_.set_keep_alive_max_count(100);
    http_.set_keep_alive_timeout(2);  // an idle keep-alive connection holds a pool thread

    // "Expect: 100-continue" is answered before the pre-routing handler runs: a body that
    // would be refused gets its error instead of "100 Continue", so the client never sends it.
    http_.set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
      return refuse_unread_body(req, res) ? res.status : 100;
    });
    http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      // An HTTP/1.0 client's "Connection: Keep-Alive" would get httplib's HTTP/1.1 answer
      // with a Keep-Alive header but no "Connection: keep-alive", which such a client reads
      // as "the server closes": it closes, with "Connection: close" saying so.
      if (req.version == "HTTP/1.0") close_after_response(req);
      // Before any body byte is read: a client that declares more than the limit gets its
      // 413 at once, not after uploading it (or after the read timeout if it waits first).
      if (refuse_unread_body(req, res)) return httplib::Server::HandlerResponse::Handled;
      // httplib reads a body only for POST, PUT, PATCH and DELETE: another method's body would
      // be left on the connection and parsed as the next request. Answered, then closed.
      if (body_left_unread(req)) close_after_response(req);
      if (req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
      // Duplicate Authorization headers were refused above (head_error), so this one is the
      // only one.
      if (!opt_.api_key.empty() && !bearer_key_matches(req.get_header_value("Authorization"), opt_.api_key)) {
        send_error(res, 401, "missing or wrong API key: send 'Authorization: Bearer KEY'");
        close_after_response(req);  // the body is not read
        return httplib::Server::HandlerResponse::Handled;
      }
      const State s = state_.load();
      if (s != State::Ready) {
        send_error(res, 503, s == State::Loading ? "the model is loading" : "the server is shutting down");
        res.set_header("Retry-After", "1");
        close_after_response(req);  // the body is not read
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    http_.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;  // a handler's own error body
      std::string msg = "HTTP " + std::to_string(res.status);
      if (res.status == 404) msg = "unknown route " + req.method + " " + req.path;
      if (res.status == 413)
        msg = over_limit_message();
      if (res.status == 400) msg = unparsed_request_message(res);
      if (res.status == 414) msg = "request line longer than " + std::to_string(kMaxRequestLineBytes) + " bytes";
      // httplib refuses a Range it cannot parse before the pre-routing hook that drops a
      // valid one (prepare_request), so only a malformed one gets here.
      if (res.status == 416)
        msg = "Range header '" + printable(req.get_header_value("Range")) +
              "' not understood (a well-formed, satisfiable Range is ignored: send one or none)";
      send_error(res, res.status, msg);
      // httplib's own 413 and 416 leave the body unread; a request it could not parse (400,
      // 408, 414, 431, 501) leaves the stream at an unknown point.
      if (res.status == 400 || res.status == 408 || res.status == 413 || res.status == 414 || res.status == 416 ||
          res.status == 431 || res.status == 501)
        close_after_response(req);
    });
    // The 408 of a request line that did not arrive in time (httplib answers nothing then).
    http_.set_own_error_body([this](int status, const std::string& message) {
      metrics_.request("other", status);
      return dump(error_body(status, message));
    });
    http_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string msg = "internal error";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        msg = e.what();
      } catch (...) {
      }
      send_error(res, 500, msg);
    });
    http_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      const RequestReading* r = current_request();
      metrics_.request(route_label(req.path), r && r->metrics_status ? r->metrics_status : res.status);
    });

    http_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      const State s = state_.load();
      res.status = s == State::Ready ? 200 : 503;
      res.set_content(dump(json{{"status", s == State::Ready ? "ok" : s == State::Loading ? "loading" : "shutting_down"}}),
                      "application/json");
    });
    http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_.render(), "text/plain; version=0.0.4");
    });
    http_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump(json{{"object", "list"}, {"data", json::array({model_json()})}}), "application/json");
    });
    http_.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string id = req.path.substr(sizeof kModelPrefix - 1);
      if (id != model_name_) {
        res.status = 404;
        json e = error_body(404, "the model '" + printable(id) + "' does not exist (this server serves '" +
                                     printable(model_name_) + "')", "model");
        e["error"]["code"] = "model_not_found";  // OpenAI's code for it
        return res.set_content(dump(e), "application/json");
      }
      res.set_content(dump(model_json()), "application/json");
    });
    // Bodies are read by our handlers (ContentReader), not by httplib: its own reading caps
    // application/x-www-form-urlencoded bodies (curl -d's default type) at 8 KiB in the
    // compiled library, whatever the payload limit, and does not cap chunked bodies at all.
    http_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res,
                                         const httplib::ContentReader& reader) {
      if (std::string body; read_body(req, reader, res, body)) generate(req, res, Endpoint::Completions, body);
    });
    http_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res,
                                              const httplib::ContentReader& reader) {
      if (std::string body; read_body(req, reader, res, body)) generate(req, res, Endpoint::Chat, body);
    });
    // Anything else: 405 for a known route with another method, else 404.
    auto fallback = [](const httplib::Request& req, httplib::Response& res) {
      for (const auto& r : kRoutes)
        if (req.path == r[1] || (r[1] == std::string("/v1/models") && route_label(req.path) == "/v1/models/{model}")) {
          res.set_header("Allow", r[0]);
          return send_error(res, 405, "method " + req.method + " is not allowed on " + req.path + " (use " + r[0] + ")");
        }
      send_error(res, 404, "unknown route " + req.method + " " + req.path);
    };
    auto fallback_with_body = [this, fallback](const httplib::Request& req, httplib::Response& res,
                                               const httplib::ContentReader& reader) {
      if (std::string body; read_body(req, reader, res, body)) fallback(req, res);
    };
    http_.Get(".*", fallback);
    http_.Post(".*", fallback_with_body);
    http_.Put(".*", fallback_with_body);
    http_.Patch(".*", fallback_with_body);
    http_.Delete(".*", fallback_with_body);
    http_.Options(".*", fallback);
  }

  json model_json() const {
    return {{"id", model_name_}, {"object", "model"}, {"created", created_}, {"owned_by", "llmport"}};
  }

  // Why httplib could not parse a request (its 400): a header line or section over the
  // limit is 431, a head that did not arrive within the read timeout 408, a well-formed
  // request line with a method httplib does not route 501 (res.status set).
  std::string unparsed_request_message(httplib::Response& res) const {
    const RequestReading* r = current_request();
    if (r && r->headers_too_large) {
      res.status = 431;
      return "request header fields over the limit of " + std::to_string(kMaxHeaderLineBytes) +
             " bytes per line or " + std::to_string(kMaxHeaderBytes) + " bytes in all";
    }
    if (r && r->read_timed_out && !r->head_complete) {
      res.status = 408;
      return read_timeout_message("request headers");
    }
    if (const std::string m = r ? unimplemented_method(r->raw_head) : std::string(); !m.empty()) {
      res.status = 501;
      return "method " + m + " is not implemented (this server answers GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS)";
    }
    return "malformed HTTP request";
  }

  std::string read_timeout_message(const std::string& what) const {
    return what + " not received within the read timeout of " + std::to_string(opt_.read_timeout_s) + " s";
  }

  // The one 413 message (pre-routing, httplib's own 413, a body that grew past the limit).
  std::string over_limit_message() const {
    return "request body over the limit of " + std::to_string(opt_.max_body_bytes) + " bytes";
  }

  // The whole request body, at most max_body_bytes; false (the response set: 413 over the
  // limit, 400 for a body that could not be read) otherwise.
  bool read_body(const httplib::Request& req, const httplib::ContentReader& reader, httplib::Response& res,
                 std::string& body) const {
    // RFC 9112 6.3: a request with neither Content-Length nor chunked Transfer-Encoding has
    // no body. Reading one anyway waits for the client's next bytes until the read timeout.
    if (!req.has_header("Content-Length") && req.get_header_value("Transfer-Encoding") != "chunked")
      return true;
    RequestReading* conn = current_request();
    if (conn && req.get_header_value("Transfer-Encoding") == "chunked") conn->chunked_body = true;
    bool over = false;
    // While the body arrives the connection waits on its client: the pool may end it for a
    // new connection when every thread is taken (serve/connection_pool.hpp).
    if (conn) connection_phase(ConnPhase::Waiting, conn->socket);
    const bool ok = reader([&](const char* data, std::size_t n) {
      if (body.size() + n > opt_.max_body_bytes) {
        over = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (conn) connection_phase(ConnPhase::Handling, conn->socket);
    if (ok) return true;
    if (over || res.status == 413) {
      send_error(res, 413, over_limit_message());
    } else if (conn && conn->body_malformed) {
      send_error(res, 400, "malformed chunked request body");
    } else if (conn && conn->read_timed_out) {
      send_error(res, 408, read_timeout_message("request body"));
    } else {
      send_error(res, 400, "could not read the request body");
    }
    close_after_response(req);  // the rest of the body is not read
    return false;
  }

  std::vector<int> prompt_ids(const GenerationRequest& r) const {
    std::vector<int> ids;
    if (r.endpoint == Endpoint::Chat) {
      if (!template_ || !tok_)
        throw ApiError(400, "this model has no chat template: use /v1/completions", "messages");
      try {
        EncodeOptions eo;
        eo.add_special_tokens = false;  // the template writes the BOS
        ids = tok_->encode(render_chat_prompt(*template_, r.messages, special_token_vars(*tok_)), eo);
      } catch (const Error& e) {
        // The template's errors lead with its file (the server's path: not the client's
        // business), then "chat template line N: ..."; others (the rendered text's
        // encoding) get the context.
        std::string what = e.what();
        if (const std::string& origin = template_origin_; !origin.empty() && what.rfind(origin + ": ", 0) == 0)
          what.erase(0, origin.size() + 2);
        throw ApiError(400, what.rfind("chat template", 0) == 0 ? what : "chat template: " + what, "messages");
      }
    } else if (r.prompt_ids) {
      ids = *r.prompt_ids;
      for (int id : ids)
        if (id >= cfg_.vocab_size)
          throw ApiError(400, "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                  std::to_string(cfg_.vocab_size) + ")", "prompt");
    } else {
      if (!tok_) throw ApiError(400, "this model has no tokenizer: send the prompt as token ids", "prompt");
      ids = tok_->encode(*r.prompt_text);
    }
    if (ids.empty()) throw ApiError(400, "the prompt encodes to zero tokens", "prompt");
    // Stop strings match the decoded text: without a tokenizer there is none, and a stop
    // that can never match must not be taken silently.
    if (!tok_ && !r.stop.empty())
      throw ApiError(400, "this model has no tokenizer: stop strings cannot match its output (token ids only)", "stop");
    return ids;
  }

  // The text an alternative token `id` would add after token `prev`: decoded alone, a token
  // loses what the decoder strips at the start of a text (the leading space of a
  // SentencePiece "▁there"). After a special token (BOS: nothing decoded yet) it is
  // the start of the text.
  std::string token_text(int prev, int id) const {
    if (!tok_) return std::to_string(id);
    if (tok_->is_special(prev)) return tok_->decode({id}, false);
    const std::string before = tok_->decode({prev}, false);
    const std::string both = tok_->decode({prev, id}, false);
    if (both.size() >= before.size() && both.compare(0, before.size(), before) == 0) return both.substr(before.size());
    return tok_->decode({id}, false);
  }

  /// `text`: what the chosen token added to the text (TextPipe::last_text; so the `tokens`
  /// join to the text, each at its `text_offset`); `prev`: the token before it.
  /// `bytes`: the token's own (token_bytes), where the text it adds holds more (a byte
  /// piece's character finished by it, earlier byte pieces held until it) or less (half a
  /// character); a skipped special token's are its text's ("").
  TokenLogprob token_logprob(int prev, const std::string& text, const TokenEvent& ev) const {
    TokenLogprob t{tok_ ? text : std::to_string(ev.id), ev.logprob, {}, std::nullopt};
    // Its text holds earlier bytes only after a byte piece the stream held: then its own
    // text is what it adds after that piece; else the text it adds (after a special token
    // too, where decoding it alone would drop a leading space).
    if (tok_ && !tok_->is_special(ev.id))
      t.bytes = tok_->token_bytes(ev.id).value_or(tok_->token_bytes(prev) ? token_text(prev, ev.id) : text);
    for (const auto& [id, lp] : ev.top)
      t.top.push_back({token_text(prev, id), lp, tok_ ? tok_->token_bytes(id) : std::nullopt});
    return t;
  }

  // A token's logprob entry and its text_offset (characters), held back with its text.
  struct HeldLogprob {
    TokenLogprob lp;
    int offset = 0;
  };
  using LogprobHoldback = TokenHoldback<HeldLogprob>;

  struct LogprobList {
    std::vector<TokenLogprob> entries;
    std::vector<int> offsets;  // text_offset of each
  };

  // The entries `held` releases with `released_bytes` of the text (a stop string cut it
  // there when `stopped`): the `tokens` join to the text, each at its offset.
  LogprobList take_logprobs(LogprobHoldback& held, std::size_t released_bytes, bool stopped) const {
    LogprobList out;
    for (auto& [h, text] : held.release(released_bytes, stopped)) {
      // Cut where the stop string starts inside it: its bytes are then the cut text's.
      if (tok_ && text != h.lp.token) h.lp.bytes.reset();
      if (tok_) h.lp.token = std::move(text);
      out.entries.push_back(std::move(h.lp));
      out.offsets.push_back(h.offset);
    }
    return out;
  }

  // Counts a generation request from its handler's start until its response is written
  // (a stream's: until httplib releases its content provider).
  struct Inflight {
    std::atomic<int>& n;
    explicit Inflight(std::atomic<int>& c) : n(c) { n.fetch_add(1); }
    ~Inflight() { n.fetch_sub(1); }
    Inflight(const Inflight&) = delete;
    Inflight& operator=(const Inflight&) = delete;
  };

  void generate(const httplib::Request& req, httplib::Response& res, Endpoint ep, const std::string& body) {
    auto guard = std::make_shared<Inflight>(inflight_);
    GenerationRequest r;
    GenerationParams p;
    try {
      r = parse_request(body, ep);
      p.prompt = prompt_ids(r);
      p.max_tokens = token_budget(r, static_cast<int>(p.prompt.size()), slot_ctx_);
    } catch (const ApiError& e) {
      return send_error(res, e.status(), e.what(), e.param(), e.code());
    }
    p.sampling = r.sampling;
    if (!r.seeded) p.sampling.seed = std::random_device{}() * 0x100000001ull + std::random_device{}();
    p.stop_ids = (ep == Endpoint::Chat && tok_) ? chat_stop_ids(cfg_.stop_ids(), *tok_) : cfg_.stop_ids();
    p.top_logprobs = r.top_logprobs;
    const int n_prompt = static_cast<int>(p.prompt.size());
    const std::vector<int> prompt = p.prompt;
    auto gen = scheduler_->submit(std::move(p));
    if (!gen) {
      res.set_header("Retry-After", "1");
      return send_error(res, 429, "the server is busy: " + std::to_string(opt_.parallel) + " requests running and " +
                                      std::to_string(opt_.queue) + " queued; retry later");
    }
    ResponseHead head{ep, (ep == Endpoint::Chat ? "chatcmpl-" : "cmpl-") + response_id(),
                      static_cast<long long>(std::time(nullptr)), model_name_};
    if (r.stream) return stream(res, r, head, gen, prompt, guard, req.version == "HTTP/1.0");

    // A client that hangs up before its whole answer is ready cancels it (its slot is free
    // at once); the socket is looked at every kClientCheck, whether tokens arrive or not.
    // A FIN alone may be a half-close: probed once (serve/connection.hpp), HTTP/1.1 with an
    // interim "100 Continue", HTTP/1.0 (no 1xx) with the first bytes of its own response.
    RequestReading* conn = current_request();
    const int client_fd = conn ? conn->socket : -1;
    const bool interim = req.version == "HTTP/1.1";
    bool probed = false;
    constexpr auto kClientCheck = std::chrono::milliseconds(100);
    auto next_check = Clock::now() + kClientCheck;
    TextPipe pipe(tok_.get(), prompt, r.stop);
    std::string text;
    LogprobHoldback held;
    int n_gen = 0;
    int prev = prompt.back();
    // text_offset counts characters (Python len), as OpenAI's and vLLM's: byte offsets put a
    // client slicing its text in the wrong place after the first non-ASCII character.
    int decoded = 0;  // characters the tokens so far added (text_offset)
    TokenEvent ev;
    for (;;) {
      const auto w = gen->next(ev, kClientCheck);
      if (client_fd >= 0 && Clock::now() >= next_check) {
        next_check = Clock::now() + kClientCheck;
        const bool gone = client_gone(client_fd, probed, [&] {
          return interim ? send_interim_continue(client_fd) : send_response_prefix(*conn);
        });
        if (gone) {
          gen->cancel();
          return send_error(res, 499, "the client closed the connection");  // never delivered
        }
      }
      if (w == Generation::Wait::Timeout) continue;
      if (w == Generation::Wait::Done) break;
      ++n_gen;
      text += pipe.push(ev.id);
      if (r.logprobs) {
        held.push({token_logprob(prev, pipe.last_text(), ev), decoded}, pipe.last_text());
        decoded += static_cast<int>(jinja::ustr::length(pipe.last_text()));
      }
      prev = ev.id;
      if (pipe.stopped()) {
        gen->cancel();
        break;
      }
    }
    std::string reason = pipe.stopped() ? "stop" : gen->finish_reason();
    if (reason == "cancelled") {
      // Past the shutdown grace: the server is going, so is this connection.
      close_after_response(req);
      return send_error(res, 503, "the server is shutting down");
    }
    if (reason == "error") return send_error(res, 500, "generation failed: " + gen->error());
    if (!pipe.stopped()) text += pipe.finish();
    const LogprobList l = take_logprobs(held, pipe.stopped() ? text.size() : SIZE_MAX, pipe.stopped());
    const ResponseJson lp = r.logprobs ? logprobs_json(ep, l.entries, l.offsets) : ResponseJson(nullptr);
    res.set_content(dump(completion_body(head, text, reason, lp, n_prompt, n_gen)), "application/json");
  }

  void stream(httplib::Response& res, const GenerationRequest& r, const ResponseHead& head,
              std::shared_ptr<Generation> gen, const std::vector<int>& prompt,
              std::shared_ptr<Inflight> guard, bool http10) {
    const int n_prompt = static_cast<int>(prompt.size());
    struct State {
      TextPipe pipe;
      LogprobHoldback held;       // logprob entries wait for their text (stop strings, UTF-8)
      std::size_t released = 0;  // bytes of text sent
      bool started = false, finished = false;
      bool probed = false;  // a FIN was probed with a comment line
      int n_gen = 0;
      int offset = 0;
      int prev = 0;  // the token before the next one
    };
    auto st = std::make_shared<State>(State{TextPipe(tok_.get(), prompt, r.stop), {}});
    st->prev = prompt.back();
    // While no token comes (queued behind busy slots, a long prefill) nothing is written, so
    // a client that hung up went unnoticed: its request kept its queue place (a 429 for the
    // next client) and later a slot. Looked at on every wait as the whole-answer path does;
    // a FIN is probed with an SSE comment line (clients skip it), which a closed socket
    // answers with a reset.
    RequestReading* conn = current_request();
    const int client_fd = conn ? conn->socket : -1;
    res.set_header("Cache-Control", "no-cache");
    auto provider =
        [this, st, gen, head, n_prompt, conn, client_fd, logprobs = r.logprobs, include_usage = r.include_usage](
            std::size_t, httplib::DataSink& sink) {
          auto send = [&](const auto& j) {  // a response body (ResponseJson) or an error body
            const std::string e = sse_event(dump(j));
            return sink.write(e.data(), e.size());
          };
          // The client went away mid-stream: counted as nginx's 499, as a whole answer is.
          auto client_gone_now = [&] {
            if (conn) conn->metrics_status = 499;
            gen->cancel();  // its queue place or slot is free at once
            return false;
          };
          if (!st->started) {
            st->started = true;
            if (head.endpoint == Endpoint::Chat && !send(chunk_body(head, "", nullptr, "", /*role=*/true)))
              return client_gone_now();
          }
          TokenEvent ev;
          const auto w = gen->next(ev, std::chrono::milliseconds(100));
          if (w == Generation::Wait::Timeout) {
            const bool gone = client_fd >= 0 && client_gone(client_fd, st->probed, [&] {
              static const char kProbe[] = ": waiting\n\n";
              return sink.write(kProbe, sizeof kProbe - 1);
            });
            return gone ? client_gone_now() : true;
          }
          if (w == Generation::Wait::Token) {
            ++st->n_gen;
            const std::string piece = st->pipe.push(ev.id);
            st->released += piece.size();
            ResponseJson lp = nullptr;
            if (logprobs) {
              st->held.push({token_logprob(st->prev, st->pipe.last_text(), ev), st->offset}, st->pipe.last_text());
              const LogprobList l = take_logprobs(st->held, st->released, st->pipe.stopped());
              lp = logprobs_json(head.endpoint, l.entries, l.offsets);
            }
            st->prev = ev.id;
            st->offset += static_cast<int>(jinja::ustr::length(st->pipe.last_text()));
            if (!st->pipe.stopped() || !piece.empty() || logprobs) {
              if (!send(chunk_body(head, piece, lp, ""))) return client_gone_now();
            }
            if (!st->pipe.stopped()) return true;
            gen->cancel();
          }
          // Done (or a stop string): the rest, the finish chunk, usage, [DONE].
          std::string reason = st->pipe.stopped() ? "stop" : gen->finish_reason();
          if (reason == "cancelled" || reason == "error") {
            const std::string msg = reason == "error" ? "generation failed: " + gen->error() : "the server is shutting down";
            const int status = reason == "error" ? 500 : 503;
            if (conn) conn->metrics_status = status;
            send(error_body(status, msg));
            sink.done();
            return true;
          }
          const std::string rest = st->pipe.stopped() ? "" : st->pipe.finish();
          // The tokens whose text was held to the end (a partial stop string, a character).
          const LogprobList l = take_logprobs(st->held, SIZE_MAX, st->pipe.stopped());
          const ResponseJson rest_lp =
              logprobs ? logprobs_json(head.endpoint, l.entries, l.offsets) : ResponseJson(nullptr);
          if (!rest.empty() || !l.entries.empty()) send(chunk_body(head, rest, rest_lp, ""));
          send(chunk_body(head, "", nullptr, reason));
          if (include_usage) send(usage_chunk(head, n_prompt, st->n_gen));
          const std::string done = sse_event("[DONE]");
          sink.write(done.data(), done.size());
          sink.done();
          return true;
        };
    auto release = [gen, guard](bool) { gen->cancel(); };  // always: a finished generation ignores it
    // HTTP/1.0 has no chunked coding (RFC 9112 6.1: never sent to a 1.0 client, who would
    // read the chunk sizes as data): the events go unframed and the close ends the body
    // (the pre-routing handler marked a 1.0 connection to close after its response).
    if (http10)
      res.set_content_provider("text/event-stream", provider, release);
    else
      res.set_chunked_content_provider("text/event-stream", provider, release);
  }

  std::filesystem::path dir_;
  ServeOptions opt_;
  ModelConfig cfg_;
  int slot_ctx_ = 0;
  std::unique_ptr<Tokenizer> tok_;
  std::string chat_template_;
  std::unique_ptr<ChatTemplate> template_;
  std::string template_origin_;  // the file chat_template_ came from (errors name it)
  std::string model_name_;
  long long created_ = static_cast<long long>(std::time(nullptr));
  std::unique_ptr<WeightStore> weights_;
  std::unique_ptr<Engine> engine_;
  Metrics metrics_;
  std::unique_ptr<Scheduler> scheduler_;
  std::atomic<State> state_{State::Loading};
  // Response ids: a random 64-bit prefix per process and a counter, so that ids do not
  // repeat across restarts or the replicas behind one balancer (clients and logs key on
  // them), as OpenAI's random ids do not.
  std::string response_id() {
    return fmt::format("{:016x}{:08x}", id_base_, static_cast<std::uint32_t>(++next_id_));
  }
  const std::uint64_t id_base_ = std::random_device{}() * 0x100000000ULL ^ std::random_device{}();
  std::atomic<uint64_t> next_id_{0};
  std::atomic<int> inflight_{0};
  HttpServer http_;
};

}  // namespace
}  // namespace serve

int run_server(const std::filesystem::path& model_dir, const ServeOptions& opt) {
  serve::Server s(model_dir, opt);
  return s.run();
}

}  // namespace llmport
