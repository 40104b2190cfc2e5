// `llmport perplexity` against the independent numpy reference's figures for stories260K
// (golden/perplexity_public.json: llama-perplexity's method, fp32), the log-probs file and
// the KL-divergence statistics, and every bad input as a one-line exit 2.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cctype>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/perplexity.hpp"
#include "llmport/tokenizer.hpp"
#include "verify/verify_support.hpp"

namespace llmport {
namespace {
namespace fs = std::filesystem;
using test::run_llmport;
using test::stories_dir;
using test::TempDir;

fs::path ppl_text() { return test::shared_path("models/stories260K/golden/perplexity_public.txt"); }
nlohmann::json ppl_golden() {
  std::ifstream f(test::shared_path("models/stories260K/golden/perplexity_public.json"));
  return nlohmann::json::parse(f);
}

PerplexityOptions fp32_options(int ctx) {
  PerplexityOptions o;
  o.engine.dtype = DType::F32;
  o.engine.threads = 1;
  o.ctx = ctx;
  return o;
}

// The fp32 run at `ctx` with its log-probs saved to `file`: the base of a KLD comparison.
PerplexityResult save_fp32_base(const fs::path& file, int ctx) {
  auto opt = fp32_options(ctx);
  opt.save_logits = file;
  return run_perplexity(stories_dir(), ppl_text(), opt);
}

TEST(Perplexity, ReproducesTheReferenceFiguresAtEveryContext) {
  const auto g = ppl_golden();
  ASSERT_FALSE(g["results"].empty());
  for (const auto& want : g["results"]) {
    const int ctx = want["ctx"];
    SCOPED_TRACE(ctx);
    const auto r = run_perplexity(stories_dir(), ppl_text(), fp32_options(ctx));
    EXPECT_EQ(r.n_tokens, g["n_tokens"].get<int64_t>());
    EXPECT_EQ(r.n_chunks, want["n_chunks"].get<int>());
    EXPECT_EQ(r.n_scored, want["n_scored"].get<int64_t>());
    EXPECT_NEAR(r.ppl, want["ppl"].get<double>(), 1e-3 * want["ppl"].get<double>());
    EXPECT_NEAR(r.mean_nll, want["mean_nll"].get<double>(), 1e-3);
    ASSERT_EQ(r.running_ppl.size(), static_cast<std::size_t>(r.n_chunks));
    EXPECT_DOUBLE_EQ(r.running_ppl.back(), r.ppl);
    EXPECT_GT(r.ppl_error, 0);
  }
}

TEST(Perplexity, KlDivergenceAgainstASavedRun) {
  TempDir t;
  const auto base = save_fp32_base(t.path() / "fp32.bin", 64);
  ASSERT_TRUE(fs::is_regular_file(t.path() / "fp32.bin"));
  // The same run against itself: nothing changed.
  auto same_opt = fp32_options(64);
  same_opt.kl_base = t.path() / "fp32.bin";
  const auto same = run_perplexity(stories_dir(), ppl_text(), same_opt);
  ASSERT_TRUE(same.kl.has_value());
  EXPECT_NEAR(same.kl->mean, 0.0, 1e-9);
  EXPECT_EQ(same.kl->same_top1, 1.0);
  EXPECT_NEAR(same.kl->ppl_ratio, 1.0, 1e-6);  // the base holds fp32-rounded log-probs
  EXPECT_NEAR(same.kl->base_ppl, base.ppl, 1e-6 * base.ppl);
  EXPECT_NE(same.kl->base_label.find("(not independent)"), std::string::npos);
  // bf16 against fp32: a small, non-zero divergence (bf16 rounding of weights and activations).
  auto bf16_opt = same_opt;
  bf16_opt.engine.dtype = DType::BF16;
  const auto bf16 = run_perplexity(stories_dir(), ppl_text(), bf16_opt);
  EXPECT_GT(bf16.kl->mean, 1e-6);
  EXPECT_LT(bf16.kl->mean, 2e-3);
  EXPECT_GE(bf16.kl->max, bf16.kl->p99);
  EXPECT_GE(bf16.kl->p99, bf16.kl->median);
  EXPECT_GT(bf16.kl->same_top1, 0.97);
  // A base made for another ctx does not line up: refused.
  auto other = fp32_options(128);
  other.kl_base = t.path() / "fp32.bin";
  EXPECT_THROW(run_perplexity(stories_dir(), ppl_text(), other), UsageError);
}

// The rows of a --save-logits file (header skipped), position-major.
std::vector<std::vector<float>> read_logprob_rows(const fs::path& f, int vocab) {
  const std::string data = test::read_file(f);
  uint64_t len = 0;
  std::memcpy(&len, data.data() + 8, 8);
  std::vector<std::vector<float>> rows;
  for (std::size_t off = 16 + len; off + vocab * sizeof(float) <= data.size(); off += vocab * sizeof(float)) {
    rows.emplace_back(static_cast<std::size_t>(vocab));
    std::memcpy(rows.back().data(), data.data() + off, vocab * sizeof(float));
  }
  return rows;
}

// Every KLD statistic and its uncertainty against llama-perplexity's formulas, recomputed
// here from the two runs' saved rows (q4_0 against fp32, ctx 64): mean KLD
// +- sqrt((mean(k^2) - mean(k)^2) / (n - 1)), same top p +- sqrt(p (1 - p) / (n - 1)), mean
// dp and its error, RMS dp +- 0.5 / rms * err(mean dp^2), ln(PPL(Q)/PPL(base)) +- the error
// of the mean NLL difference, percentiles by linear interpolation at q (n - 1); and the
// markdown prints them in llama-perplexity's spelling.
TEST(Perplexity, KlStatisticsAndUncertaintiesFollowLlamaPerplexity) {
  TempDir t;
  save_fp32_base(t.path() / "fp32.bin", 64);
  auto opt = fp32_options(64);
  opt.engine.dtype.reset();
  set_dtype_flag(opt.engine, "q4_0");
  opt.kl_base = t.path() / "fp32.bin";
  opt.save_logits = t.path() / "q4.bin";
  const auto r = run_perplexity(stories_dir(), ppl_text(), opt);
  ASSERT_TRUE(r.kl.has_value());
  const int vocab = 512;  // stories260K
  const auto p = read_logprob_rows(t.path() / "fp32.bin", vocab), q = read_logprob_rows(t.path() / "q4.bin", vocab);
  ASSERT_EQ(p.size(), 372u);
  ASSERT_EQ(q.size(), p.size());
  const auto base_header = [&] {
    const std::string d = test::read_file(t.path() / "fp32.bin");
    uint64_t len = 0;
    std::memcpy(&len, d.data() + 8, 8);
    return nlohmann::json::parse(d.substr(16, len));
  }();
  const std::vector<int> tokens = base_header["tokens"];
  const double n = static_cast<double>(p.size());
  double sk = 0, sk2 = 0, same = 0, sdp = 0, sdp2 = 0, sdp4 = 0, sd = 0, sd2 = 0;
  std::vector<double> ks;
  for (std::size_t i = 0; i < p.size(); ++i) {
    double k = 0;
    for (int v = 0; v < vocab; ++v) k += std::exp(double(p[i][v])) * (double(p[i][v]) - q[i][v]);
    k = std::max(0.0, k);
    ks.push_back(k);
    sk += k;
    sk2 += k * k;
    same += std::max_element(p[i].begin(), p[i].end()) - p[i].begin() ==
            std::max_element(q[i].begin(), q[i].end()) - q[i].begin();
    const int tok = tokens[i];
    const double dp = std::exp(double(q[i][tok])) - std::exp(double(p[i][tok]));
    sdp += dp;
    sdp2 += dp * dp;
    sdp4 += dp * dp * dp * dp;
    const double d = double(p[i][tok]) - q[i][tok];  // nll_Q - nll_P
    sd += d;
    sd2 += d * d;
  }
  const auto se = [n](double s1, double s2) { return std::sqrt((s2 / n - (s1 / n) * (s1 / n)) / (n - 1)); };
  std::sort(ks.begin(), ks.end());
  const double pos99 = 0.99 * (n - 1);
  const auto lo = static_cast<std::size_t>(pos99);
  const double p99 = ks[lo] + (pos99 - double(lo)) * (ks[lo + 1] - ks[lo]);
  const auto& s = *r.kl;
  const auto near = [](double got, double want) { EXPECT_NEAR(got, want, 1e-9 + 1e-9 * std::abs(want)); };
  near(s.mean, sk / n);
  near(s.mean_unc, se(sk, sk2));
  near(s.median, 0.5 * (ks[185] + ks[186]));
  near(s.p99, p99);
  near(s.max, ks.back());
  near(s.same_top1, same / n);
  near(s.same_top1_unc, std::sqrt(same / n * (1 - same / n) / (n - 1)));
  near(s.mean_dp, sdp / n);
  near(s.mean_dp_unc, se(sdp, sdp2));
  near(s.rms_dp, std::sqrt(sdp2 / n));
  near(s.rms_dp_unc, 0.5 / std::sqrt(sdp2 / n) * se(sdp2, sdp4));
  near(s.ln_ppl_ratio, sd / n);
  near(s.ln_ppl_ratio_unc, se(sd, sd2));
  EXPECT_NEAR(std::exp(s.ln_ppl_ratio), s.ppl_ratio, 1e-6);
  EXPECT_GT(s.mean_unc, 0);
  EXPECT_GT(s.same_top1_unc, 0);
  EXPECT_GT(s.rms_dp_unc, 0);
  const std::string md = r.to_markdown();
  EXPECT_NE(md.find(fmt::format("Mean    KLD: {:10.6f} ± {:10.6f}", s.mean, s.mean_unc)), std::string::npos) << md;
  EXPECT_NE(md.find(fmt::format("Same top p: {:6.3f} ± {:5.3f} %", 100 * s.same_top1, 100 * s.same_top1_unc)),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(fmt::format("RMS Δp    : {:6.3f} ± {:5.3f} %", 100 * s.rms_dp, 100 * s.rms_dp_unc)),
            std::string::npos)
      << md;
  const auto j = r.to_json()["kl_divergence"];
  EXPECT_EQ(j["mean_uncertainty"].get<double>(), s.mean_unc);
  EXPECT_EQ(j["rms_delta_p_uncertainty"].get<double>(), s.rms_dp_unc);
  EXPECT_EQ(j["same_top1_uncertainty"].get<double>(), s.same_top1_unc);
}

// A base file whose header is intact but whose rows are not log-probabilities (a NaN, a
// positive value, a row that does not normalise, -inf at the scored token) or that holds an extra row is refused with
// the file and row named, not turned into KLD figures.
TEST(Perplexity, DamagedBaseRowsAreRefused) {
  TempDir t;
  save_fp32_base(t.path() / "fp32.bin", 64);
  const std::string good = llmport::test::read_file(t.path() / "fp32.bin");
  uint64_t base_header = 0;
  std::memcpy(&base_header, good.data() + 8, 8);
  const std::size_t row0 = 16 + base_header;  // first float of row 0
  struct Case {
    const char* name;
    std::function<void(std::string&)> damage;
    const char* says;
  };
  auto put = [](std::string& b, std::size_t at, float v) { std::memcpy(b.data() + at, &v, 4); };
  const auto vocab = nlohmann::json::parse(good.substr(16, base_header)).at("vocab").get<std::size_t>();
  const std::size_t row1 = row0 + vocab * 4;
  const auto target0 = nlohmann::json::parse(good.substr(16, base_header)).at("tokens").at(0).get<std::size_t>();
  const std::string neg_inf_says = "row 0: the scored token " + std::to_string(target0) + " has log-prob -inf";
  // Row 0's scored token given a finite -1e30 and its probability moved to another token:
  // the row still sums to 1, so only the perplexity it makes shows the edit.
  const auto move_target_mass = [&](std::string& b) {
    float lp = 0, other = 0;
    const std::size_t at = row0 + target0 * 4, to = row0 + ((target0 + 1) % vocab) * 4;
    std::memcpy(&lp, b.data() + at, 4);
    std::memcpy(&other, b.data() + to, 4);
    put(b, to, static_cast<float>(std::log(std::exp(double{other}) + std::exp(double{lp}))));
    put(b, at, -1e30f);
  };
  for (const Case& c : {Case{"nan", [&](std::string& b) { put(b, row0 + 4 * 7, NAN); }, "row 0 token 7"},
                        Case{"positive", [&](std::string& b) { put(b, row1 + 4 * 3, 0.5f); }, "row 1 token 3"},
                        Case{"unnormalised", [&](std::string& b) {
                               for (std::size_t v = 0; v < vocab; ++v) put(b, row1 + 4 * v, -1.0f);
                             }, "row 1: probabilities sum to"},
                        // The base gave the scored token probability 0: infinite perplexity.
                        Case{"scored -inf", [&](std::string& b) { put(b, row0 + 4 * target0, -INFINITY); },
                             neg_inf_says.c_str()},
                        Case{"scored -1e30", move_target_mass,
                             "perplexity beyond double range"},
                        Case{"extra row", [&](std::string& b) { b += b.substr(row0, vocab * 4); }, "more rows"},
                        // Cut short anywhere: named as truncation, not as another format.
                        Case{"cut in magic", [&](std::string& b) { b.resize(5); }, "truncated (5 bytes, inside the 8-byte magic)"},
                        Case{"cut in length", [&](std::string& b) { b.resize(12); }, "truncated (inside the header length)"},
                        Case{"cut in header", [&](std::string& b) { b.resize(40); }, "truncated header"}}) {
    SCOPED_TRACE(c.name);
    std::string bad = good;
    c.damage(bad);
    const fs::path f = t.path() / (std::string(c.name) + ".bin");
    std::ofstream(f, std::ios::binary) << bad;
    auto opt = fp32_options(64);
    opt.kl_base = f;
    try {
      run_perplexity(stories_dir(), ppl_text(), opt);
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(f.string()), std::string::npos) << e.what();
    }
  }
}

// A base whose header was edited: the rows stay, the header says another tokenization
// (the same text, ctx and count, other scored tokens), another format version, or another
// producer. The first two are refused; a producer that is llmport however spelled, or none,
// is labelled not independent.
TEST(Perplexity, ABaseHeaderForAnotherTokenizationOrFormatIsRefused) {
  TempDir t;
  save_fp32_base(t.path() / "fp32.bin", 64);
  const std::string good = llmport::test::read_file(t.path() / "fp32.bin");
  uint64_t base_header = 0;
  std::memcpy(&base_header, good.data() + 8, 8);
  const nlohmann::json header = nlohmann::json::parse(good.substr(16, base_header));
  // The good file's rows under the header text `hs` (any bytes), as <name>.bin.
  auto with_raw_header = [&](const std::string& name, const std::string& hs) {
    const uint64_t len = hs.size();
    std::string b = good.substr(0, 8);
    b.append(reinterpret_cast<const char*>(&len), 8);
    b += hs + good.substr(16 + base_header);
    const fs::path f = t.path() / (name + ".bin");
    std::ofstream(f, std::ios::binary) << b;
    auto opt = fp32_options(64);
    opt.kl_base = f;
    return opt;
  };
  auto with_header = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json h = header;
    edit(h);
    return with_raw_header(name, h.dump());
  };
  struct Refused {
    std::string name;
    std::function<void(nlohmann::json&)> edit;
    std::string says;
  };
  for (const Refused& c : {Refused{"retokenized", [](nlohmann::json& h) { h["tokens"][5] = h["tokens"][5].get<int>() + 1; },
                                   "tokens[5]: the base scored token"},
                           Refused{"no_tokens", [](nlohmann::json& h) { h.erase("tokens"); }, "tokens: expected the 372"},
                           // Same scored tokens, another context before them (another tokenizer can
                           // agree on the scored halves: round of session 37).
                           Refused{"other_context",
                                   [](nlohmann::json& h) {
                                     h["evaluated_tokens"][1] = h["evaluated_tokens"][1].get<int>() + 1;
                                   },
                                   "evaluated_tokens[1]: the base read token"},
                           Refused{"no_context", [](nlohmann::json& h) { h.erase("evaluated_tokens"); },
                                   "evaluated_tokens: expected the 768 tokens this run evaluates"},
                           Refused{"format_v2", [](nlohmann::json& h) { h["format"] = "llmport-perplexity-logprobs/2"; },
                                   "made for format"},
                           // Optional fields of another type: named, not nlohmann's raw type error,
                           // and a model_files list must not skip the weights comparison.
                           Refused{"dtype_number", [](nlohmann::json& h) { h["dtype"] = 5; },
                                   "dtype_number.bin: header: dtype: expected a string, got 5"},
                           Refused{"producer_object", [](nlohmann::json& h) { h["producer"] = nlohmann::json::object(); },
                                   "producer_object.bin: header: producer: expected a string, got {}"},
                           Refused{"model_files_list", [](nlohmann::json& h) { h["model_files"] = {"config.json"}; },
                                   "model_files_list.bin: header: model_files: expected an object"}}) {
    SCOPED_TRACE(c.name);
    try {
      run_perplexity(stories_dir(), ppl_text(), with_header(c.name, c.edit));
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
  // A header that is not one JSON object, or names a key twice: one line naming the file,
  // never nlohmann's raw exception text.
  const std::string dumped = header.dump();
  for (const auto& [name, hs, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"dup_ctx", "{\"ctx\":64," + dumped.substr(1), "raw_dup_ctx.bin: header: key \"ctx\" appears twice"},
           {"cut", dumped.substr(0, dumped.size() / 2), "raw_cut.bin: header: malformed JSON: syntax error"},
           {"array", "[1,2]", "raw_array.bin: header: expected a JSON object"}}) {
    SCOPED_TRACE(name);
    try {
      run_perplexity(stories_dir(), ppl_text(), with_raw_header("raw_" + name, hs));
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
    }
  }
  for (const char* producer : {"LLM-P0rt 0.1.0", "llmp\xD0\xBErt", ""}) {
    const auto r = run_perplexity(stories_dir(), ppl_text(), with_header("producer", [&](nlohmann::json& h) {
                                    if (*producer) h["producer"] = producer;
                                    else h.erase("producer");
                                  }));
    ASSERT_TRUE(r.kl.has_value());
    EXPECT_NE(r.kl->base_label.find("(not independent)"), std::string::npos) << r.kl->base_label;
    fs::remove(t.path() / "producer.bin");
  }
  // llmport named under another header key: the provenance rule, before the content's.
  const auto generator = run_perplexity(stories_dir(), ppl_text(), with_header("generator", [](nlohmann::json& h) {
                                          h["producer"] = "numpy reference";
                                          h["generator"] = "llmport 0.3";
                                        }));
  EXPECT_EQ(generator.kl->base_label, "numpy reference fp32 (not independent)");
}

// llmport's own rows under another producer's name: the content gives them away, as
// verify's does (count_self_matching: kSelfMatchShare of the log-probs bit for bit, or rows
// shifted by one constant), whole, with a value nudged by an ulp (once a plain label: the
// rule wanted every row), or shifted (within the 1e-3 normalization check). Another
// computation's rows (the reference backend's fp32 sums) keep the producer's label.
TEST(Perplexity, ABaseWhoseRowsAreThisRunsIsNotIndependentWhateverItsProducer) {
  TempDir t;
  save_fp32_base(t.path() / "fp32.bin", 64);
  const std::string good = llmport::test::read_file(t.path() / "fp32.bin");
  uint64_t len = 0;
  std::memcpy(&len, good.data() + 8, 8);
  nlohmann::json header = nlohmann::json::parse(good.substr(16, len));
  header["producer"] = "numpy reference";
  // `rows` (good's or another file's float32 rows) under the renamed header, with `edit`.
  auto base = [&](const std::string& name, std::string rows, const std::function<void(float*, std::size_t)>& edit) {
    edit(reinterpret_cast<float*>(rows.data()), rows.size() / sizeof(float));
    const std::string hs = header.dump();
    const uint64_t n = hs.size();
    std::string b = good.substr(0, 8);
    b.append(reinterpret_cast<const char*>(&n), 8);
    b += hs + rows;
    const fs::path f = t.path() / (name + ".bin");
    std::ofstream(f, std::ios::binary) << b;
    auto opt = fp32_options(64);
    opt.kl_base = f;
    return run_perplexity(stories_dir(), ppl_text(), opt).kl->base_label;
  };
  const std::string own_rows = good.substr(16 + len);
  EXPECT_EQ(base("copy", own_rows, [](float*, std::size_t) {}),
            "numpy reference fp32 (not independent: 100% of its log-probs are this run's, bit for bit)");
  const std::string nudged = base("nudged", own_rows, [](float* v, std::size_t) { v[0] = std::nextafter(v[0], 0.0f); });
  EXPECT_TRUE(nudged.starts_with("numpy reference fp32 (not independent: 99.99% of")) << nudged;
  EXPECT_TRUE(nudged.ends_with("% of its log-probs are this run's, bit for bit)")) << nudged;
  EXPECT_EQ(base("shifted", own_rows, [](float* v, std::size_t n) {
              for (std::size_t i = 0; i < n; ++i) v[i] -= 2e-5f;
            }),
            "numpy reference fp32 (not independent: 100% of its log-probs are this run's, bit for bit or shifted by a "
            "constant)");
  auto other = fp32_options(64);
  other.engine.backend = "reference";
  other.save_logits = t.path() / "reference.bin";
  run_perplexity(stories_dir(), ppl_text(), other);
  const std::string ref = llmport::test::read_file(t.path() / "reference.bin");
  uint64_t ref_len = 0;
  std::memcpy(&ref_len, ref.data() + 8, 8);
  ASSERT_NE(ref.substr(16 + ref_len), own_rows);
  EXPECT_EQ(base("other", ref.substr(16 + ref_len), [](float*, std::size_t) {}), "numpy reference fp32");
  // The same digests in upper case are the same files.
  for (auto& [name, sha] : header["model_files"].items()) {
    std::string up = sha.get<std::string>();
    for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    sha = up;
  }
  EXPECT_EQ(base("upper_case", ref.substr(16 + ref_len), [](float*, std::size_t) {}), "numpy reference fp32");
  // A header whose model_files name other bytes: computed from other weights, said so.
  header["model_files"]["model.safetensors"] = std::string(64, '0');
  EXPECT_EQ(base("other_weights", ref.substr(16 + ref_len), [](float*, std::size_t) {}),
            "numpy reference fp32 (made for other weights: model.safetensors differ)");
}

// Weight-only q8_0 / q4_0 (the seven projections; down_proj's input 172 is not a multiple of
// 32 and stays fp32, as does the tied lm_head) against the fp32 run: the reference's mean
// KLD within 5% and same-top-1 within 1.5 points, at every context of the golden. The
// reference backend multiplies exactly the dequantized values (fp32 activations, as the
// golden's quantizer run does); the cpu kernels widen the same blocks in registers (act
// f32, forced: the default on cpu is q8 activation blocks, checked below).
TEST(Perplexity, QuantizedKlDivergenceReproducesTheReference) {
  const auto g = ppl_golden();
  int checked = 0;
  for (const auto& want : g["results"]) {
    const int ctx = want["ctx"];
    TempDir t;
    save_fp32_base(t.path() / "fp32.bin", ctx);
    for (const auto& [name, q] : want["quant"].items())
    for (const char* backend : {"reference", "cpu"}) {
      SCOPED_TRACE("ctx " + std::to_string(ctx) + " " + name + " " + backend);
      auto opt = fp32_options(ctx);
      opt.engine.backend = backend;
      opt.engine.dtype.reset();
      set_dtype_flag(opt.engine, name);
      opt.engine.quant_act = ActQuant::F32;
      opt.kl_base = t.path() / "fp32.bin";
      const auto r = run_perplexity(stories_dir(), ppl_text(), opt);
      ASSERT_TRUE(r.kl.has_value());
      EXPECT_EQ(r.dtype, name);
      const double kld = q["mean_kld"], top1 = q["same_top1"];
      EXPECT_NEAR(r.kl->mean, kld, 0.05 * kld);
      EXPECT_NEAR(r.kl->same_top1, top1, 0.015);
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);
}

// The cpu default, q8 activation blocks (int8 dot products), against the same golden: the
// issue's acceptance, q8_0 mean KLD <= 2.5x the weight-only figure (the activation
// rounding is of the weight rounding's size, so it roughly doubles it), q4_0 still within
// the 5% band (its weight error dominates), same-top-1 within 1.5 points.
TEST(Perplexity, Int8ActivationsStayWithinTheIssuesBands) {
  const auto g = ppl_golden();
  int checked = 0;
  for (const auto& want : g["results"]) {
    const int ctx = want["ctx"];
    TempDir t;
    save_fp32_base(t.path() / "fp32.bin", ctx);
    for (const auto& [name, q] : want["quant"].items()) {
      SCOPED_TRACE("ctx " + std::to_string(ctx) + " " + name);
      auto opt = fp32_options(ctx);
      opt.engine.backend = "cpu";
      opt.engine.dtype.reset();
      set_dtype_flag(opt.engine, name);
      opt.engine.quant_act = ActQuant::Q8;
      opt.kl_base = t.path() / "fp32.bin";
      const auto r = run_perplexity(stories_dir(), ppl_text(), opt);
      ASSERT_TRUE(r.kl.has_value());
      const double kld = q["mean_kld"], top1 = q["same_top1"];
      if (name == "q8_0") {
        EXPECT_GT(r.kl->mean, kld);  // the activations' rounding adds to the weights'
        EXPECT_LE(r.kl->mean, 2.5 * kld);
      } else {
        EXPECT_NEAR(r.kl->mean, kld, 0.05 * kld);
      }
      EXPECT_NEAR(r.kl->same_top1, top1, 0.015);
      std::cout << "[int8 activations] ctx " << ctx << " " << name << ": mean KLD " << r.kl->mean << " (weight-only "
                << kld << "), same top-1 " << r.kl->same_top1 << " (" << top1 << ")\n";
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);
}

TEST(Perplexity, BadInputIsOneLineExitTwo) {
  TempDir t;
  test::write_file(t.path() / "empty.txt", "");
  test::write_file(t.path() / "short.txt", "Once upon a time");
  test::write_file(t.path() / "junk.bin", "not a log-probs file at all");
  test::write_file(t.path() / "exists.bin", "user data");
  // A dangling symlink: writing through it would create a file the user never named.
  fs::create_symlink(t.path() / "elsewhere.bin", t.path() / "dangling.bin");
  test::write_file(t.path() / "latin1.txt", "caf\xe9 au lait, once upon a time there was a dog");
  fs::create_directory(t.path() / "adir.txt");
  ASSERT_EQ(::mkfifo((t.path() / "fifo.bin").c_str(), 0600), 0);  // a read would block for ever
  const std::string m = stories_dir().string(), txt = ppl_text().string();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : {Case{{"-f", (t.path() / "missing.txt").string()}, "not found"},
                        Case{{"-f", (t.path() / "empty.txt").string()}, "empty"},
                        Case{{"-f", (t.path() / "adir.txt").string()}, "adir.txt: text file not found (or not a regular"},
                        Case{{"-f", (t.path() / "latin1.txt").string(), "-c", "8"},
                             "latin1.txt: text to tokenize is not valid UTF-8 (byte offset 3)"},
                        Case{{"-f", (t.path() / "short.txt").string(), "-c", "64"}, "shorter than one chunk"},
                        Case{{"-f", txt, "-c", "2"}, "--ctx-size: must be >= 3, got 2"},
                        Case{{"-f", txt, "-c", "513"}, "above the model's context of 512"},
                        Case{{"-f", txt, "--kl-divergence-base", (t.path() / "junk.bin").string()}, "not an llmport"},
                        Case{{"-f", txt, "--kl-divergence-base", (t.path() / "fifo.bin").string()},
                             "fifo.bin: not a regular file"},
                        Case{{"-f", txt, "--save-logits", (t.path() / "exists.bin").string()}, "not overwriting"},
                        Case{{"-f", txt, "--save-logits", (t.path() / "dangling.bin").string()}, "not overwriting"},
                        Case{{"-f", txt, "-o", "xml"}, "-o"},
                        Case{{"-f", txt, "--dtype", "q5_1"}, "unknown dtype 'q5_1'"}}) {
    std::vector<std::string> args = {"perplexity", m, "-t", "1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = run_llmport(args);
    EXPECT_EQ(r.exit_code, 2) << c.says << ": " << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  EXPECT_EQ(test::read_file(t.path() / "exists.bin"), "user data");
  EXPECT_FALSE(fs::exists(t.path() / "elsewhere.bin"));
  auto ok = run_llmport({"perplexity", m, "-f", txt, "-c", "64", "-t", "1", "--dtype", "fp32"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("Final estimate: PPL = 3.69"), std::string::npos) << ok.out;
  auto q4 = run_llmport({"perplexity", m, "-f", txt, "-c", "64", "-t", "1", "--dtype", "q4_0"});
  EXPECT_EQ(q4.exit_code, 0) << q4.err;
  EXPECT_NE(q4.out.find("(q4_0)"), std::string::npos) << q4.out;
}

// Special-token text in the file is plain text, as llama-perplexity tokenizes it (parse_special
// false): "</s>" after each sentence once became 31 EOS ids that the model was scored on.
TEST(Perplexity, SpecialTokenTextIsPlainText) {
  TempDir t;
  std::string text = test::read_file(ppl_text());
  for (std::size_t p = text.find(". "); p != std::string::npos; p = text.find(". ", p + 6)) text.insert(p + 1, "</s>");
  const fs::path f = t.path() / "eos.txt";
  test::write_file(f, text);
  const auto tok = Tokenizer::load(stories_dir());
  const auto plain = tok->encode(text, EncodeOptions{.add_special_tokens = true, .split_special_tokens = true});
  const auto parsed = tok->encode(text);
  ASSERT_NE(plain.size(), parsed.size());
  ASSERT_EQ(std::count(plain.begin(), plain.end(), *tok->eos_id()), 0);
  const PerplexityResult r = run_perplexity(stories_dir(), f, fp32_options(64));
  EXPECT_EQ(r.n_tokens, static_cast<int64_t>(plain.size()));
}

// A NaN weight (an RMSNorm weight, which no dtype quantizes) makes every logit NaN: the run
// is a check failure naming chunk and position (exit 1), never "PPL = nan" with exit 0, in
// every dtype and in both output formats. Layer 0's input norm feeds quantized projections:
// with q8 activation blocks its NaN used to vanish (a plausible PPL 3.6996 for q8_0).
TEST(Perplexity, NonFiniteLogitsFailTheRunInsteadOfPrintingNan) {
  for (const char* tensor : {"model.norm.weight", "model.layers.0.input_layernorm.weight"})
  for (const char* dtype : {"fp32", "q8_0", "q4_0"})
    for (const char* out : {"md", "json"}) {
      SCOPED_TRACE(std::string(tensor) + " " + dtype + " " + out);
      TempDir t;
      test::copy_stories_with_nan(t.path(), tensor);
      const fs::path saved = t.path() / "saved.bin";
      auto r = run_llmport({"perplexity", t.path().string(), "-f", ppl_text().string(), "-c", "64", "-t", "1",
                            "--dtype", dtype, "-o", out, "--save-logits", saved.string()});
      EXPECT_FALSE(fs::exists(saved)) << "a failed run leaves no partial log-probs file";
      EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
      EXPECT_EQ(r.err.rfind("error: non-finite logits in chunk 1 at position 32: 512 of 512 values", 0), 0u) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("null"), std::string::npos) << r.out;
    }
}

// A weight whose square overflows fp32 zeroes every logit: the "perplexity" was the
// vocabulary size (512), a uniform guess printed with exit 0 (session-36 walk).
TEST(Perplexity, DegenerateLogitsFailTheRunInsteadOfPrintingTheVocabularySize) {
  TempDir t;
  test::copy_stories(t.path());
  test::edit_f32_tensor(t.path() / "model.safetensors", "model.layers.0.mlp.down_proj.weight",
                        [](float& v, std::size_t i) {
                          if (i == 0) v = 1e30f;
                        });
  auto r = run_llmport({"perplexity", t.path().string(), "-f", ppl_text().string(), "-c", "64", "-t", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("error: degenerate logits in chunk 1 at position 32: all 512 values are 0", 0), 0u) << r.err;
  EXPECT_EQ(r.out.find("512.0000"), std::string::npos) << r.out;
}

// Finite logits far out of scale (the final norm weight x2000): the mean NLL passes 709
// nats, whose exp is no double. It printed "PPL = inf +/- inf" (JSON null) with exit 0.
TEST(Perplexity, APerplexityBeyondDoubleRangeFailsTheRun) {
  TempDir t;
  test::copy_stories(t.path());
  test::edit_f32_tensor(t.path() / "model.safetensors", "model.norm.weight", [](float& v, std::size_t) { v *= 2000; });
  auto r = run_llmport({"perplexity", t.path().string(), "-f", ppl_text().string(), "-c", "64", "-t", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("error: perplexity overflows: mean NLL ", 0), 0u) << r.err;
  EXPECT_EQ(r.out.find("PPL = inf"), std::string::npos) << r.out;
}

// A planted quantization fault (every block scale of one quantized projection x2: o_proj of
// one layer, input 64) moves the q4_0 perplexity KLD of stories260K outside the 5% band
// around the reference's figure, in every layer: the band is a check that can fail. The
// reference backend (exact dequantization) is the measuring side.
TEST(Perplexity, ADoubledQuantScaleLeavesTheKldBand) {
  const auto g = ppl_golden();
  const auto& want = g["results"][0];
  const int ctx = want["ctx"];
  const double golden_kld = want["quant"]["q4_0"]["mean_kld"];
  TempDir t;
  save_fp32_base(t.path() / "fp32.bin", ctx);
  const int n_layers = 5;  // stories260K (config.json num_hidden_layers)
  for (int layer = 0; layer < n_layers; ++layer) {
    SCOPED_TRACE(layer);
    auto opt = fp32_options(ctx);
    opt.engine.backend = "reference";
    opt.engine.dtype.reset();
    set_dtype_flag(opt.engine, "q4_0");
    opt.engine.fault = FaultInjection::parse("proj_scale@" + std::to_string(layer) + "=2");
    opt.kl_base = t.path() / "fp32.bin";
    const auto r = run_perplexity(stories_dir(), ppl_text(), opt);
    ASSERT_TRUE(r.kl.has_value());
    EXPECT_GT(r.kl->mean, 1.05 * golden_kld) << "layer " << layer << ": " << r.kl->mean;
  }
}

}  // namespace
}  // namespace llmport
