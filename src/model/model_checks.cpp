// Phase-0 gate checks: config accepted and consistent, weights complete with right shapes.
#include "llmport/model_checks.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "llmport/architecture.hpp"
#include "llmport/dtype.hpp"
#include "llmport/error.hpp"
#include "llmport/weights.hpp"
#include "model/json_fields.hpp"

namespace llmport {

using nlohmann::json;
using namespace detail;

std::vector<std::string> config_consistency_problems(const ModelConfig& cfg, const json& raw) {
  std::vector<std::string> p;
  auto same_int = [&](const char* key, long long resolved, const char* name) {
    if (auto v = lenient_int(raw, key); v && *v != resolved)
      p.push_back(std::string(name) + " " + std::to_string(resolved) + " != config.json " + key + " " +
                  std::to_string(*v));
  };
  same_int("num_hidden_layers", cfg.n_layers, "n_layers");
  same_int("hidden_size", cfg.emb_dim, "emb_dim");
  same_int("num_attention_heads", cfg.n_heads, "n_heads");
  same_int("num_key_value_heads", cfg.n_kv_heads, "n_kv_heads");
  same_int("head_dim", cfg.head_dim, "head_dim");
  same_int("intermediate_size", cfg.hidden_dim, "hidden_dim");
  same_int("vocab_size", cfg.vocab_size, "vocab_size");
  same_int("max_position_embeddings", cfg.max_position_embeddings, "max_position_embeddings");
  auto same_double = [&](const char* key, double resolved) {
    if (auto v = lenient_double(raw, key); v && std::fabs(*v - resolved) > 1e-12 * std::fabs(*v))
      p.push_back(std::string(key) + " " + std::to_string(resolved) + " != config.json " + std::to_string(*v));
  };
  same_double("rope_theta", cfg.rope_theta);
  same_double("rms_norm_eps", cfg.rms_norm_eps);
  if (auto t = lenient_bool(raw, "tie_word_embeddings"); t && *t != cfg.tie_word_embeddings)
    p.push_back("tie_word_embeddings differs from config.json");
  if (!lenient_int(raw, "head_dim") && static_cast<long long>(cfg.head_dim) * cfg.n_heads != cfg.emb_dim)
    p.push_back("head_dim " + std::to_string(cfg.head_dim) + " * n_heads != emb_dim without an explicit head_dim");
  if (cfg.n_kv_heads <= 0 || cfg.n_heads % cfg.n_kv_heads != 0)
    p.push_back("n_heads " + std::to_string(cfg.n_heads) + " is not a multiple of n_kv_heads " +
                std::to_string(cfg.n_kv_heads));
  if (auto problem = head_dim_problem(cfg.head_dim)) p.push_back(*problem);
  if (cfg.max_seq <= 0 || cfg.max_seq > cfg.max_position_embeddings)
    p.push_back("max_seq " + std::to_string(cfg.max_seq) + " outside 1..max_position_embeddings");
  auto in_vocab = [&](int id, const char* what) {
    if (id < 0 || id >= cfg.vocab_size)
      p.push_back(std::string(what) + " " + std::to_string(id) + " outside the vocabulary (vocab_size " +
                  std::to_string(cfg.vocab_size) + ")");
  };
  if (cfg.bos_token_id) in_vocab(*cfg.bos_token_id, "bos_token_id");
  for (int id : cfg.stop_ids()) in_vocab(id, "eos_token_id");
  if (cfg.sliding_window && cfg.max_seq > *cfg.sliding_window)
    p.push_back("max_seq " + std::to_string(cfg.max_seq) + " exceeds the sliding window " +
                std::to_string(*cfg.sliding_window));
  return p;
}

float overflow_magnitude() noexcept { return std::sqrt(std::numeric_limits<float>::max()); }

namespace {

float element(const unsigned char* p, DType dtype, std::size_t i) noexcept {
  if (dtype == DType::F32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);  // views may be unaligned inside the file
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return dtype == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

}  // namespace

ValueScan scan_tensor_values(const TensorView& t) noexcept {
  ValueScan s;
  const float limit = overflow_magnitude();
  const auto n = static_cast<std::size_t>(t.numel());
  const auto* p = static_cast<const unsigned char*>(t.data);
  bool have_overflow = false, have_f16 = false;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = element(p, t.dtype, i);
    if (!std::isfinite(v)) {
      ++s.non_finite;
      continue;
    }
    const float a = std::fabs(v);
    if (a < kF16InfFrom) continue;  // rounds to a finite fp16 (65519 -> 65504)
    ++s.above_f16;
    if (a > limit) ++s.overflowing;
    if ((a > limit && !have_overflow) || !have_f16) {
      s.first_large_index = i;
      s.first_large_value = v;
    }
    have_f16 = true;
    have_overflow = have_overflow || a > limit;
  }
  return s;
}

std::size_t count_non_finite(const TensorView& t) noexcept { return scan_tensor_values(t).non_finite; }

namespace {

std::string at(const TensorView& v, const std::string& name, std::size_t index, float value) {
  return fmt::format("{}: {}[{}] = {:g}", v.file.string(), name, index, value);
}

// weights_finite: NaN/Inf, and finite values whose square overflows fp32 (see
// overflow_magnitude), fail; values only fp16 cannot hold are a warning.
template <class Fail>
void scan_weight_values(const WeightStore& ws, const std::vector<TensorSpec>& specs, Phase0Report& r, Fail& fail) {
  std::size_t non_finite = 0, overflowing = 0, above_f16 = 0;
  std::string first_bad, first_f16;
  for (const auto& s : specs) {
    const TensorView& v = ws.get(s.name);
    const ValueScan scan = scan_tensor_values(v);
    if (scan.non_finite && first_bad.empty())
      first_bad = v.file.string() + ": " + s.name + ": " + std::to_string(scan.non_finite) + " NaN/Inf values";
    if (scan.overflowing && first_bad.empty())
      first_bad = fmt::format("{}: |value| > sqrt(FLT_MAX) = {:.3g}, its square overflows fp32 (RMSNorm's sum "
                              "of squares, attention's q.k)",
                              at(v, s.name, scan.first_large_index, scan.first_large_value), overflow_magnitude());
    if (scan.above_f16 && first_f16.empty()) first_f16 = at(v, s.name, scan.first_large_index, scan.first_large_value);
    non_finite += scan.non_finite;
    overflowing += scan.overflowing;
    above_f16 += scan.above_f16;
  }
  if (above_f16 > overflowing)
    r.warnings.push_back(fmt::format("{} weight(s) with |w| >= {:g}, past fp16's max {:g} (first {}): --dtype fp16 "
                                     "rounds them to Inf",
                                     above_f16, kF16InfFrom, kF16Max, first_f16));
  if (non_finite + overflowing == 0)
    r.checks.push_back({"weights_finite", true,
                        fmt::format("no NaN/Inf and no |value| > sqrt(FLT_MAX) = {:.3g} in {} tensors",
                                    overflow_magnitude(), specs.size())});
  else
    fail("weights_finite",
         fmt::format("{} ({} NaN/Inf, {} overflowing in all tensors)", first_bad, non_finite, overflowing),
         kExitBadInput);
}

}  // namespace

Phase0Report check_model_dir(const std::filesystem::path& dir, std::optional<int> max_seq, bool scan_values) {
  Phase0Report r;
  auto fail = [&](const std::string& name, const std::string& msg, int code) {
    r.checks.push_back({name, false, msg});
    if (r.error.empty()) {
      r.error = msg;
      r.exit_code = code;
    }
  };

  json raw;
  try {
    const auto file = find_config_json(dir);
    raw = read_json_file(file);
    r.config = load_model_config(file, max_seq);
    const auto& c = *r.config;
    r.checks.push_back({"config", true,
                        c.architecture + ": n_layers " + std::to_string(c.n_layers) + ", emb_dim " +
                            std::to_string(c.emb_dim) + ", n_heads " + std::to_string(c.n_heads) + "/" +
                            std::to_string(c.n_kv_heads) + " kv, head_dim " + std::to_string(c.head_dim) +
                            ", max_seq " + std::to_string(c.max_seq)});
  } catch (const Error& e) {
    fail("config", e.what(), e.exit_code());
    return r;
  }

  auto problems = config_consistency_problems(*r.config, raw);
  if (problems.empty()) {
    r.checks.push_back({"config_consistency", true, "resolved fields match config.json"});
  } else {
    std::string msg = problems.front();
    if (problems.size() > 1) msg += " (and " + std::to_string(problems.size() - 1) + " more)";
    fail("config_consistency", "config.json: " + msg, kExitCheckFailed);
  }

  try {
    WeightStore ws = WeightStore::open(r.config->dir, *r.config);
    // open() already matched names and shapes; re-read every expected tensor through the
    // store so the check covers what the engine will ask for.
    const auto specs = expected_tensors(*r.config);
    for (const auto& s : specs) {
      const TensorView& v = ws.get(s.name);
      if (v.shape != s.shape) throw ShapeError(v.file.string() + ": " + s.name + ": shape mismatch");
      const TensorView& by_role = ws.get(s.role, s.layer);
      if (by_role.data != v.data) throw WeightsError(s.name + ": role table disagrees with the name table");
    }
    r.n_tensors = specs.size();
    r.total_bytes = ws.total_bytes();
    r.warnings = ws.warnings();
    std::ostringstream d;
    d << r.n_tensors << " tensors (" << r.config->n_layers << " layers complete) in " << ws.files().size()
      << " file(s), " << std::fixed;
    d.precision(1);
    d << static_cast<double>(r.total_bytes) / 1e6 << " MB, stored " << dtype_name(ws.stored_dtype());
    r.checks.push_back({"weights", true, d.str()});
    if (scan_values) scan_weight_values(ws, specs, r, fail);
  } catch (const Error& e) {
    fail("weights", e.what(), e.exit_code());
  }
  r.pass = r.error.empty();
  return r;
}

json Phase0Report::to_json() const {
  json checks_j = json::array();
  for (const auto& c : checks) checks_j.push_back({{"name", c.name}, {"pass", c.pass}, {"detail", c.detail}});
  return {{"pass", pass},
          {"exit_code", exit_code},
          {"error", error.empty() ? json(nullptr) : json(error)},
          {"checks", checks_j},
          {"warnings", warnings},
          {"n_tensors", n_tensors},
          {"total_bytes", total_bytes}};
}

std::string Phase0Report::to_text() const {
  std::string s;
  for (const auto& c : checks) s += std::string("  ") + (c.pass ? "PASS " : "FAIL ") + c.name + ": " + c.detail + "\n";
  for (const auto& w : warnings) s += "  warning: " + w + "\n";
  return s;
}

}  // namespace llmport
