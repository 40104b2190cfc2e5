// `llmport perplexity`: llama-perplexity's method over a text file (perplexity.hpp), the
// log-probs file of --save-logits and the KL-divergence statistics against such a file.
#include "llmport/perplexity.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <span>
#include <sstream>
#include <tuple>
#include <utility>

#include "hub/file_hash.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/records.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/verify.hpp"
#include "llmport/weights.hpp"

namespace llmport {
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& f) {
  if (!fs::is_regular_file(f)) throw UsageError(f.string() + ": text file not found (or not a regular file)");
  std::ifstream in(f, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw UsageError(f.string() + ": cannot read the text file");
  if (ss.str().empty()) throw UsageError(f.string() + ": the text file is empty");
  return ss.str();
}

// {file: sha256} of what decides the model's outputs: config.json and the weight files.
nlohmann::json model_files(const fs::path& dir) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name == "config.json" || e.path().extension() == ".safetensors") j[name] = hub::sha256_file(e.path());
  }
  return j;
}

// The header of a log-probs file, and the stream positioned at its first row.
struct LogprobsFile {
  nlohmann::json header;
  std::ifstream in;
};

LogprobsFile open_logprobs(const fs::path& f) {
  LogprobsFile lf;
  // A FIFO or a device would block or stream forever: the base is a file --save-logits wrote.
  if (std::error_code ec; !fs::is_regular_file(f, ec))
    throw UsageError(f.string() + ": not a regular file (the KL-divergence base is a file perplexity --save-logits wrote)");
  lf.in.open(f, std::ios::binary);
  if (!lf.in) throw UsageError(f.string() + ": cannot open the KL-divergence base file");
  char magic[8];
  uint64_t len = 0;
  lf.in.read(magic, 8);
  const auto got = static_cast<std::size_t>(lf.in.gcount());
  // The start of the magic cut short is a truncated file, not another format.
  if (got < 8 && got > 0 && std::memcmp(magic, kLogprobsMagic, got) == 0)
    throw UsageError(f.string() + ": truncated (" + std::to_string(got) + " bytes, inside the 8-byte magic)");
  if (got < 8 || std::memcmp(magic, kLogprobsMagic, 8) != 0)
    throw UsageError(f.string() + ": not an llmport log-probs file (written by perplexity --save-logits)");
  if (!lf.in.read(reinterpret_cast<char*>(&len), 8)) throw UsageError(f.string() + ": truncated (inside the header length)");
  if (len > (64u << 20)) throw UsageError(f.string() + ": damaged header length");
  std::string h(len, '\0');
  if (!lf.in.read(h.data(), static_cast<std::streamsize>(len))) throw UsageError(f.string() + ": truncated header");
  try {
    // A key twice (two "ctx") would make "which base is this" a guess: refused.
    lf.header = parse_json_text(h, f.string() + ": header", JsonKeys::distinct);
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  if (!lf.header.is_object()) throw UsageError(f.string() + ": header: expected a JSON object");
  return lf;
}

// An optional header string (producer, dtype): absent reads "", another type is damage.
std::string header_string(const fs::path& f, const nlohmann::json& h, const char* key) {
  const auto it = h.find(key);
  if (it == h.end()) return "";
  if (!it->is_string())
    throw UsageError(f.string() + ": header: " + key + ": expected a string, got " + it->dump().substr(0, 80));
  return it->get<std::string>();
}

// A header key or string naming llmport as a word ({"generator": "llmport 0.3"} beside
// "producer": "numpy"), as verify's metadata walk reads a golden; not what names the model.
bool header_mentions_llmport(const nlohmann::json& h) {
  for (const auto& [k, v] : h.items()) {
    if (k == "model" || k == "model_files" || k == "tokens" || k == "format") continue;
    if (k.find('/') == std::string::npos && mentions_llmport(k)) return true;
    if (v.is_string() && mentions_llmport(v.get<std::string>())) return true;
  }
  return false;
}

// A base whose header records the model's files (model_files: {name: sha256}) for other
// bytes than this model's was computed from other weights: comparable position by
// position, but a KLD against it measures two models, not this run's numerics. Said in
// the label (" (made for other weights: config.json, model.safetensors differ)").
std::string other_weights_note(const fs::path& f, const nlohmann::json& h, const fs::path& dir) {
  const auto it = h.find("model_files");
  if (it == h.end()) return "";
  // Any other type would skip the weights comparison without a word.
  if (!it->is_object())
    throw UsageError(f.string() + ": header: model_files: expected an object {file name: sha256}, got " +
                     it->dump().substr(0, 80));
  const nlohmann::json ours = model_files(dir);
  // Hex digests compare case-insensitively (a tool may print them upper-case).
  auto same_digest = [](const nlohmann::json& a, const nlohmann::json& b) {
    if (!a.is_string() || !b.is_string()) return false;
    std::string x = a.get<std::string>(), y = b.get<std::string>();
    for (auto* s : {&x, &y})
      for (char& c : *s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return x == y;
  };
  std::string differ;
  for (const auto& [name, sha] : ours.items())
    if (!it->contains(name) || !same_digest((*it)[name], sha)) differ += (differ.empty() ? "" : ", ") + name;
  for (const auto& [name, sha] : it->items())
    if (!ours.contains(name)) differ += (differ.empty() ? "" : ", ") + name;
  return differ.empty() ? "" : " (made for other weights: " + differ + " differ)";
}

// Refuses a base made for another text, ctx, vocab or tokenization (its positions would not
// line up), or in another format. The scored tokens are compared one by one, as
// llama-perplexity's --kl-divergence does: one text tokenized two ways has the same sha256,
// ctx and often the same count, yet its rows predict other tokens.
void check_base(const fs::path& f, const nlohmann::json& h, const std::string& text_sha, int ctx, int vocab,
                int64_t n_scored, const std::vector<int>& targets, const std::vector<int>& evaluated) {
  auto want = [&](const char* key, const nlohmann::json& v) {
    if (!h.contains(key) || h[key] != v)
      throw UsageError(f.string() + ": made for " + key + " " + (h.contains(key) ? h[key].dump() : "(none)") +
                       ", this run has " + v.dump() + ": not comparable");
  };
  want("format", "llmport-perplexity-logprobs/1");
  want("text_sha256", text_sha);
  want("ctx", ctx);
  want("vocab", vocab);
  want("n_scored", n_scored);
  // `key` must hold this run's `ids` (`what`: what they are; `verb`: what the base did with one).
  auto same_ids = [&](const char* key, const std::vector<int>& ids, const std::string& what, const char* verb) {
    const auto it = h.find(key);
    if (it == h.end() || !it->is_array() || it->size() != ids.size())
      throw UsageError(fmt::format("{}: {}: expected the {} {}", f.string(), key, ids.size(), what));
    for (std::size_t k = 0; k < ids.size(); ++k)
      if ((*it)[k] != ids[k])
        throw UsageError(fmt::format("{}: {}[{}]: the base {} token {}, this run token {} (another tokenization of "
                                     "the text): not comparable",
                                     f.string(), key, k, verb, (*it)[k].dump(), ids[k]));
  };
  same_ids("tokens", targets, "scored tokens of this run", "scored");
  // The context each scored position was computed from: another tokenizer can agree on the
  // scored halves of the chunks and differ before them (llama-perplexity's base file holds
  // every evaluated token for this reason).
  same_ids("evaluated_tokens", evaluated,
           "tokens this run evaluates (a base saved by an older llmport lacks them: save it again)", "read");
}

// A base row must be a log-probability distribution: no NaN or +inf, no value above 0
// (log p <= 0; 1e-6 allows float rounding of row - lse), and sum exp = 1 within 1e-3 (float
// log-probs of a normalised row sum to 1 within ~1e-6). Anything else would turn the KLD
// statistics into garbage that still prints as numbers. The scored token's log-prob must be
// finite: -inf (probability 0) makes the base's perplexity infinite and every ratio to it
// -inf or 0, which printed as a figure with a +- 0 error.
void check_base_row(const fs::path& f, std::span<const float> lp, int64_t row, int target) {
  if (target >= 0 && static_cast<std::size_t>(target) < lp.size() && std::isinf(lp[static_cast<std::size_t>(target)]))
    throw UsageError(fmt::format("{}: row {}: the scored token {} has log-prob -inf (probability 0 in the base run): "
                                 "its perplexity is infinite, nothing compares to it",
                                 f.string(), row, target));
  double mass = 0;
  for (std::size_t v = 0; v < lp.size(); ++v) {
    const float x = lp[v];
    if (std::isnan(x) || x > 1e-6f)
      throw UsageError(fmt::format("{}: row {} token {}: log-prob {} is not a log-probability (NaN or > 0)",
                                   f.string(), row, v, x));
    mass += std::exp(static_cast<double>(x));
  }
  if (!(std::abs(mass - 1.0) <= 1e-3))
    throw UsageError(fmt::format("{}: row {}: probabilities sum to {:.6g}, not 1: not a log-probs row", f.string(),
                                 row, mass));
}

// The tokenizer's own message (e.g. invalid UTF-8 at a byte offset) does not say which
// input it was about; the text file's name is the user's handle on it. Special-token text
// ("</s>" in the file) is plain text, as llama-perplexity tokenizes (common_tokenize with
// parse_special false): parsed, it became EOS ids the model was never meant to score.
std::vector<int> encode_text(const Tokenizer& tok, const std::string& text, const fs::path& f) {
  try {
    return tok.encode(text, EncodeOptions{.add_special_tokens = true, .split_special_tokens = true});
  } catch (const UsageError& e) {
    throw UsageError(f.string() + ": " + e.what());
  }
}

// A NaN/Inf logit means the forward pass is broken (a NaN weight, an overflow): its NLL
// would print as a NaN perplexity with exit 0. A check failure (exit 1) names the place.
void check_finite_row(std::span<const float> row, int chunk, int position) {
  std::size_t bad = 0, first = 0;
  for (std::size_t v = 0; v < row.size(); ++v)
    if (!std::isfinite(row[v]) && bad++ == 0) first = v;
  if (bad == 0) {
    // All one value (a collapsed forward pass, as `run` refuses it): the "perplexity" would
    // be the vocabulary size, a uniform guess printed as the model's.
    if (row.size() > 1 && std::all_of(row.begin(), row.end(), [&](float v) { return v == row[0]; }))
      throw GateError(fmt::format("degenerate logits in chunk {} at position {}: all {} values are {}, so every id is "
                                  "equally likely; the forward pass collapsed, no perplexity",
                                  chunk + 1, position, row.size(), row[0]));
    return;
  }
  throw GateError(fmt::format("non-finite logits in chunk {} at position {}: {} of {} values are NaN/Inf (first at "
                              "id {}); the weights or the forward pass produce non-finite values, no perplexity",
                              chunk + 1, position, bad, row.size(), first));
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// llama-perplexity's mean_and_uncertainty: the mean of n values from their sum and sum of
// squares, and the standard error of that mean (0 when n <= 10 or the variance rounds <= 0).
std::pair<double, double> mean_and_uncertainty(double sum, double sum2, double n) {
  if (n < 1) return {0.0, 0.0};
  const double f = sum / n;
  const double var = sum2 / n - f * f;
  return {f, var > 0 && n > 10 ? std::sqrt(var / (n - 1)) : 0.0};
}

// A share as a percentage cut (not rounded) to 2 decimals: "100" only when it is all.
std::string percent_floor(double share) {
  if (share >= 1.0) return "100";
  return fmt::format("{:.2f}", std::floor(share * 10000.0) / 100.0);
}

// Running sums of one comparison against the base.
struct KlAccumulator {
  std::vector<double> kld;
  int64_t same_top1 = 0;
  double sum_kld2 = 0, sum_dp = 0, sum_dp2 = 0, sum_dp4 = 0, base_nll = 0, sum_dnll = 0, sum_dnll2 = 0;
  // Log-probs of the base that are this run's, bit for bit or a row shifted by one constant
  // (count_self_matching, verify's content rule): llmport's own --save-logits of the same
  // run under another producer's name, whole or with a few values nudged.
  int64_t compared = 0, self_matching = 0;
  bool shifted = false;
  void add(const std::vector<float>& base, const std::vector<float>& lp, int target) {
    const SelfMatchCount c = count_self_matching(base, lp);
    compared += static_cast<int64_t>(std::min(base.size(), lp.size()));
    self_matching += c.identical + c.shifted;
    shifted = shifted || c.shifted > 0;
    double k = 0;
    for (std::size_t v = 0; v < lp.size(); ++v) {
      const double pb = std::exp(static_cast<double>(base[v]));
      if (pb > 0) k += pb * (static_cast<double>(base[v]) - lp[v]);
    }
    kld.push_back(std::max(0.0, k));
    sum_kld2 += kld.back() * kld.back();
    same_top1 += std::max_element(base.begin(), base.end()) - base.begin() ==
                         std::max_element(lp.begin(), lp.end()) - lp.begin()
                     ? 1
                     : 0;
    const double dp = std::exp(static_cast<double>(lp[static_cast<std::size_t>(target)])) -
                      std::exp(static_cast<double>(base[static_cast<std::size_t>(target)]));
    sum_dp += dp;
    sum_dp2 += dp * dp;
    sum_dp4 += dp * dp * dp * dp;
    base_nll -= base[static_cast<std::size_t>(target)];
    const double dnll = static_cast<double>(base[static_cast<std::size_t>(target)]) - lp[static_cast<std::size_t>(target)];
    sum_dnll += dnll;
    sum_dnll2 += dnll * dnll;
  }
  KlStats finish(double ppl, const std::string& label) const {
    KlStats s;
    const double n = static_cast<double>(kld.size());
    s.base_label = label;
    const double share = compared ? static_cast<double>(self_matching) / static_cast<double>(compared) : 0.0;
    if (share >= kSelfMatchShare && label.find("(not independent") == std::string::npos)
      s.base_label += fmt::format(" (not independent: {}% of its log-probs are this run's, bit for bit{})",
                                  percent_floor(share), shifted ? " or shifted by a constant" : "");
    double sum_kld = 0;
    for (double x : kld) sum_kld += x;
    std::tie(s.mean, s.mean_unc) = mean_and_uncertainty(sum_kld, sum_kld2, n);
    s.median = percentile(kld, 0.5);
    s.p99 = percentile(kld, 0.99);
    s.max = kld.empty() ? 0 : *std::max_element(kld.begin(), kld.end());
    s.same_top1 = static_cast<double>(same_top1) / n;
    s.same_top1_unc = n > 1 ? std::sqrt(s.same_top1 * (1 - s.same_top1) / (n - 1)) : 0.0;
    std::tie(s.mean_dp, s.mean_dp_unc) = mean_and_uncertainty(sum_dp, sum_dp2, n);
    const auto [mse, mse_unc] = mean_and_uncertainty(sum_dp2, sum_dp4, n);
    s.rms_dp = std::sqrt(mse);
    s.rms_dp_unc = s.rms_dp > 0 ? 0.5 / s.rms_dp * mse_unc : 0.0;
    s.base_ppl = std::exp(base_nll / n);
    s.ppl_ratio = ppl / s.base_ppl;
    std::tie(s.ln_ppl_ratio, s.ln_ppl_ratio_unc) = mean_and_uncertainty(sum_dnll, sum_dnll2, n);
    return s;
  }
};

}  // namespace

PerplexityResult run_perplexity(const fs::path& model_dir, const fs::path& text_file, const PerplexityOptions& opt) {
  const std::string text = read_text(text_file);
  const ModelConfig cfg = load_model_config(model_dir);
  const fs::path dir = cfg.dir.empty() ? model_dir : cfg.dir;
  if (!Tokenizer::exists(dir)) throw UsageError(dir.string() + ": perplexity needs the model's tokenizer.json");
  const auto tok = Tokenizer::load(dir);
  const int context = cfg.max_seq > 0 ? cfg.max_seq : cfg.max_position_embeddings;
  const int ctx = opt.ctx > 0 ? opt.ctx : std::min(512, context);
  if (ctx < 3) throw UsageError(fmt::format("-c {}: at least 3 tokens (positions ctx/2 .. ctx-2 are scored)", ctx));
  if (ctx > context) throw UsageError(fmt::format("-c {}: above the model's context of {} tokens", ctx, context));
  const std::vector<int> tokens = encode_text(*tok, text, text_file);
  PerplexityResult res;
  res.model = dir.string();
  res.ctx = ctx;
  res.n_tokens = static_cast<int64_t>(tokens.size());
  res.n_chunks = static_cast<int>(tokens.size() / static_cast<std::size_t>(ctx));
  if (res.n_chunks == 0)
    throw UsageError(fmt::format("{}: {} tokens, shorter than one chunk of {} (-c)", text_file.string(), tokens.size(), ctx));
  const int first = ctx / 2, last = ctx - 2;  // scored positions
  res.n_scored = static_cast<int64_t>(res.n_chunks) * (last - first + 1);
  const auto bos = tok->bos_id();
  const bool add_bos = bos && !tokens.empty() && tokens.front() == *bos;

  const WeightStore weights = WeightStore::open(dir, cfg);
  EngineOptions eo = opt.engine;
  eo.max_seq = ctx;
  Engine engine(cfg, weights, eo);
  res.dtype = precision_name(engine.dtype(), engine.quant());
  const int vocab = cfg.vocab_size;

  const bool need_files = opt.save_logits || opt.kl_base;
  const std::string text_sha = need_files ? hub::sha256_file(text_file) : "";
  std::vector<int> scored_targets;  // each scored position's next token, in order
  if (need_files)
    for (int c = 0; c < res.n_chunks; ++c)
      for (int i = first; i <= last; ++i) scored_targets.push_back(tokens[static_cast<std::size_t>(c * ctx + i + 1)]);
  const std::vector<int> evaluated =
      need_files ? std::vector<int>(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(res.n_chunks) * ctx)
                 : std::vector<int>();
  std::optional<LogprobsFile> base;
  std::string base_label;
  if (opt.kl_base) {
    base = open_logprobs(*opt.kl_base);
    check_base(*opt.kl_base, base->header, text_sha, ctx, vocab, res.n_scored, scored_targets, evaluated);
    const std::string producer = header_string(*opt.kl_base, base->header, "producer");
    const std::string dtype = header_string(*opt.kl_base, base->header, "dtype");
    base_label = (producer.empty() ? std::string("unnamed producer") : producer) + " " + (dtype.empty() ? "?" : dtype);
    // The verify rules (assess_provenance): llmport's own output, however spelled, or a
    // file that names no producer, is not an independent base.
    if (producer.empty() || names_llmport(producer) || header_mentions_llmport(base->header))
      base_label += " (not independent)";
    base_label += other_weights_note(*opt.kl_base, base->header, dir);
  }
  // A run that fails part-way (non-finite logits, a damaged base) must not leave a header
  // and some rows behind: the file would block a rerun (never overwritten) and read later
  // as a truncated base. Declared before `save`, so the stream is closed first.
  struct RemoveUnlessKept {
    std::optional<fs::path> path;
    bool keep = false;
    ~RemoveUnlessKept() {
      std::error_code ec;
      if (path && !keep) fs::remove(*path, ec);
    }
  } partial;
  std::ofstream save;
  if (opt.save_logits) {
    // O_EXCL refuses any existing path, a symlink too (dangling or not): the log-probs
    // never land on a file the user did not name as new.
    const int fd = ::open(opt.save_logits->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST)
      throw UsageError(opt.save_logits->string() + " exists; not overwriting (choose another --save-logits file)");
    if (fd < 0) throw UsageError(opt.save_logits->string() + ": cannot write the log-probs file: " + std::strerror(errno));
    ::close(fd);
    partial.path = *opt.save_logits;
    const nlohmann::json h = {{"format", "llmport-perplexity-logprobs/1"},
                              {"producer", std::string("llmport ") + LLMPORT_VERSION},
                              {"model", dir.string()},
                              {"model_files", model_files(dir)},
                              {"text_sha256", text_sha},
                              {"ctx", ctx},
                              {"vocab", vocab},
                              {"dtype", res.dtype},
                              {"n_scored", res.n_scored},
                              {"tokens", scored_targets},
                              {"evaluated_tokens", evaluated}};
    const std::string hs = h.dump();
    const uint64_t len = hs.size();
    save.open(*opt.save_logits, std::ios::binary);
    if (!save) throw UsageError(opt.save_logits->string() + ": cannot write the log-probs file");
    save.write(kLogprobsMagic, 8);
    save.write(reinterpret_cast<const char*>(&len), 8);
    save.write(hs.data(), static_cast<std::streamsize>(hs.size()));
  }

  double sum = 0, sum2 = 0;
  int64_t n = 0;
  KlAccumulator kl;
  std::vector<float> lp(static_cast<std::size_t>(vocab)), base_lp(static_cast<std::size_t>(vocab));
  for (int c = 0; c < res.n_chunks; ++c) {
    std::vector<int> chunk(tokens.begin() + static_cast<std::ptrdiff_t>(c) * ctx,
                           tokens.begin() + static_cast<std::ptrdiff_t>(c + 1) * ctx);
    if (add_bos) chunk[0] = *bos;
    engine.reset();
    const std::vector<float> logits = engine.forward(chunk, /*all_logits=*/true);  // [ctx, vocab]
    for (int i = first; i <= last; ++i) {
      const std::span<const float> row(logits.data() + static_cast<std::size_t>(i) * vocab, static_cast<std::size_t>(vocab));
      check_finite_row(row, c, i);
      const double lse = log_sum_exp(row);
      const int target = chunk[static_cast<std::size_t>(i + 1)];
      const double nll = lse - row[static_cast<std::size_t>(target)];
      sum += nll;
      sum2 += nll * nll;
      ++n;
      if (!need_files) continue;
      for (std::size_t v = 0; v < lp.size(); ++v) lp[v] = static_cast<float>(row[v] - lse);
      if (save) save.write(reinterpret_cast<const char*>(lp.data()), static_cast<std::streamsize>(lp.size() * sizeof(float)));
      if (base) {
        if (!base->in.read(reinterpret_cast<char*>(base_lp.data()), static_cast<std::streamsize>(base_lp.size() * sizeof(float))))
          throw UsageError(opt.kl_base->string() + ": truncated (fewer rows than its header says)");
        check_base_row(*opt.kl_base, base_lp, n - 1, target);
        kl.add(base_lp, lp, target);
      }
    }
    res.running_ppl.push_back(std::exp(sum / static_cast<double>(n)));
    if (opt.progress) opt.progress(c + 1, res.n_chunks, res.running_ppl.back());
  }
  if (save && !save.flush()) throw UsageError(opt.save_logits->string() + ": write failed");
  if (base && base->in.peek() != std::char_traits<char>::eof())
    throw UsageError(opt.kl_base->string() + ": more rows than its header says (damaged or another run's file)");
  res.mean_nll = sum / static_cast<double>(n);
  res.ppl = std::exp(res.mean_nll);
  // Past e^709 the perplexity is no double: "PPL = inf" with exit 0 read as a figure (a final
  // norm weight scaled 2000x gave a mean NLL of 1405 nats from finite logits).
  if (!std::isfinite(res.ppl))
    throw GateError(fmt::format("perplexity overflows: mean NLL {:.6g} nats per token (PPL = e^{:.6g}, beyond double "
                                "range): the model gives the text almost no probability (logits far out of scale?)",
                                res.mean_nll, res.mean_nll));
  // llama-perplexity's error estimate: the standard error of the mean NLL, carried to PPL.
  const double var = n > 1 ? std::max(0.0, sum2 / static_cast<double>(n) - res.mean_nll * res.mean_nll) : 0.0;
  res.ppl_error = n > 1 ? res.ppl * std::sqrt(var / static_cast<double>(n - 1)) : 0.0;
  if (base) res.kl = kl.finish(res.ppl, base_label);
  // Every row passed check_base_row, yet a scored token's finite log-prob of -1e30 (an edited
  // file: its probability was within the row's 1e-3 mass tolerance) made the base's
  // perplexity infinite and printed a PPL ratio of 0 with exit 0.
  if (res.kl && !(std::isfinite(res.kl->base_ppl) && std::isfinite(res.kl->ln_ppl_ratio)))
    throw UsageError(opt.kl_base->string() + ": its scored tokens' log-probs give a perplexity beyond double range: "
                     "no run of a model gives that (a damaged or edited file)");
  partial.keep = true;
  return res;
}

nlohmann::json PerplexityResult::to_json() const {
  nlohmann::json j = {{"model", model},       {"dtype", dtype},         {"ctx", ctx},
                      {"n_tokens", n_tokens}, {"n_chunks", n_chunks},   {"n_scored", n_scored},
                      {"mean_nll", mean_nll}, {"ppl", ppl},             {"ppl_error", ppl_error},
                      {"running_ppl", running_ppl}};
  if (kl)
    j["kl_divergence"] = {{"base", kl->base_label},
                          {"mean", kl->mean},
                          {"mean_uncertainty", kl->mean_unc},
                          {"median", kl->median},
                          {"p99", kl->p99},
                          {"max", kl->max},
                          {"same_top1", kl->same_top1},
                          {"same_top1_uncertainty", kl->same_top1_unc},
                          {"mean_delta_p", kl->mean_dp},
                          {"mean_delta_p_uncertainty", kl->mean_dp_unc},
                          {"rms_delta_p", kl->rms_dp},
                          {"rms_delta_p_uncertainty", kl->rms_dp_unc},
                          {"base_ppl", kl->base_ppl},
                          {"ppl_ratio", kl->ppl_ratio},
                          {"ln_ppl_ratio", kl->ln_ppl_ratio},
                          {"ln_ppl_ratio_uncertainty", kl->ln_ppl_ratio_unc}};
  return j;
}

std::string PerplexityResult::to_markdown() const {
  std::string s = fmt::format("perplexity of {} ({}): {} tokens, {} chunks of {}, {} scored positions\n", model, dtype,
                              n_tokens, n_chunks, ctx, n_scored);
  for (std::size_t i = 0; i < running_ppl.size(); ++i) s += fmt::format("{}[{}]{:.4f}", i ? "," : "", i + 1, running_ppl[i]);
  s += fmt::format("\nFinal estimate: PPL = {:.4f} +/- {:.5f}\n", ppl, ppl_error);
  if (kl) {
    s += fmt::format("\nKL divergence against {} (PPL {:.4f}):\n", kl->base_label, kl->base_ppl);
    // llama-perplexity's spellings and precisions ("Mean    KLD: %10.6lf ± %10.6lf", ...).
    s += fmt::format("  Mean    KLD: {:10.6f} ± {:10.6f}\n  Median  KLD: {:10.6f}\n  99.0%   KLD: {:10.6f}\n"
                     "  Maximum KLD: {:10.6f}\n",
                     kl->mean, kl->mean_unc, kl->median, kl->p99, kl->max);
    s += fmt::format("  Same top p: {:6.3f} ± {:5.3f} %\n  Mean    Δp: {:6.3f} ± {:5.3f} %\n  RMS Δp    : {:6.3f} ± {:5.3f} %\n",
                     100 * kl->same_top1, 100 * kl->same_top1_unc, 100 * kl->mean_dp, 100 * kl->mean_dp_unc,
                     100 * kl->rms_dp, 100 * kl->rms_dp_unc);
    s += fmt::format("  Mean ln(PPL(Q)/PPL(base)): {:10.6f} ± {:10.6f}\n  PPL ratio: {:.6f}\n", kl->ln_ppl_ratio,
                     kl->ln_ppl_ratio_unc, kl->ppl_ratio);
  }
  return s;
}

}  // namespace llmport
