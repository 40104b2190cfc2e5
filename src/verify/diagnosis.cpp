// Diagnosis: per-layer comparison of two prefills' hidden states, flags, and the
// phase-2 single-block gate.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "llmport/diagnosis.hpp"
#include "llmport/error.hpp"
#include "verify/format.hpp"

namespace llmport {

namespace {

// Rows of `data` ([n_rows, dim], rows for `positions`) at the positions in `want`.
std::vector<float> gather(const std::vector<float>& data, const std::vector<int>& positions,
                          const std::vector<int>& want, int dim) {
  std::map<int, std::size_t> row;
  for (std::size_t i = 0; i < positions.size(); ++i) row[positions[i]] = i;
  std::vector<float> out;  // [want.size(), dim]
  out.reserve(want.size() * static_cast<std::size_t>(dim));
  for (int p : want) {
    const std::size_t r = row.at(p);
    out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(r * static_cast<std::size_t>(dim)),
               data.begin() + static_cast<std::ptrdiff_t>((r + 1) * static_cast<std::size_t>(dim)));
  }
  return out;
}

// a - b, elementwise ([n_rows, dim] each).
std::vector<float> minus(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

std::vector<int> common(std::vector<int> a, std::vector<int> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<int> c;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(c));
  return c;
}

// Positions of the final_norm rows: the engine may normalize only the last rows.
std::vector<int> final_norm_positions(const HiddenStates& h) {
  if (h.emb_dim <= 0 || h.final_norm.empty()) return {};
  const auto n = h.final_norm.size() / static_cast<std::size_t>(h.emb_dim);
  if (n > h.positions.size()) return {};
  return std::vector<int>(h.positions.end() - static_cast<std::ptrdiff_t>(n), h.positions.end());
}

CosineStats compare_at(const std::vector<float>& a, const std::vector<int>& pa, const std::vector<float>& b,
                       const std::vector<int>& pb, const std::vector<int>& at, int dim) {
  const auto ga = gather(a, pa, at, dim);
  const auto gb = gather(b, pb, at, dim);
  return compare_rows(ga.data(), gb.data(), static_cast<int>(at.size()), dim);
}

void check_pair(const HiddenStates& e, const HiddenStates& r) {
  if (e.empty() || r.empty()) throw UsageError("diagnosis: a side recorded no hidden states");
  if (e.emb_dim != r.emb_dim)
    throw UsageError("diagnosis: emb_dim differs (engine " + std::to_string(e.emb_dim) + ", reference " +
                     std::to_string(r.emb_dim) + ")");
  if (e.layer_out.size() != r.layer_out.size())
    throw UsageError("diagnosis: engine has " + std::to_string(e.layer_out.size()) + " layer outputs, reference " +
                     std::to_string(r.layer_out.size()));
  const auto rows = [](const HiddenStates& h, const std::vector<float>& v) {
    return v.size() == static_cast<std::size_t>(h.n_rows()) * static_cast<std::size_t>(h.emb_dim);
  };
  for (std::size_t l = 0; l < e.layer_out.size(); ++l)
    if (!rows(e, e.layer_out[l]) || !rows(r, r.layer_out[l]))
      throw UsageError("diagnosis: layer " + std::to_string(l) + " output missing or of the wrong size");
}

// Flags `row` by the rules of diagnosis.hpp (NaN/inf, per-position min cosine, a median
// drop from the row before, the layer's own update), noting the first flagged row in d.
// scale_bound: the largest per-position norm deviation | ||e|| / ||r|| - 1 | (cosine is
// blind to a scale: a final norm weight or epsilon off by a factor).
void flag(DiagnosisRow& row, double prev_median, double scale_bound, DiagnosisResult& d) {
  using verify_detail::fmt_g;
  std::string why;
  if (row.stats.has_nan) why = "NaN/inf in the engine output";
  else if (row.stats.min < kFlagMinCosine)
    why = "per-position min cosine " + fmt_g(row.stats.min, 4) + " < " + fmt_g(kFlagMinCosine);
  else if (prev_median - row.stats.median > kFlagMedianDrop)
    why = "median cosine drops " + fmt_g(prev_median - row.stats.median, 3) + " from the previous " +
          (row.layer >= 0 ? "layer" : "row") + " (> " + fmt_g(kFlagMedianDrop) + ")";
  else if (row.has_update && row.update.median < kFlagUpdateMedianCosine)
    why = "the layer's own update has median cosine " + fmt_g(row.update.median, 4) + " < " +
          fmt_g(kFlagUpdateMedianCosine);
  else if (row.stats.max_norm_dev > scale_bound)
    why = "a position's norm is off by " + fmt_g(row.stats.max_norm_dev, 3) + " (> " + fmt_g(scale_bound, 3) +
          ", a scale cosine cannot see)";
  if (why.empty()) return;
  row.flagged = true;
  row.reason = why;
  if (d.first_suspicious.empty()) {
    d.first_suspicious = row.name;
    d.first_suspicious_layer = row.layer;
  }
}

// The first position whose row of `v` ([positions, dim]) has a squared L2 norm past FLT_MAX,
// and that norm. An RMSNorm reading the row squares it in fp32 (transformers:
// hidden.to(float32).pow(2).mean(-1)), gets inf and outputs zeros: the model computes
// nothing past it on any side, which cosine (zero rows agree) cannot see.
std::optional<std::pair<int, double>> norm_overflow(const std::vector<float>& v, const std::vector<int>& positions,
                                                    int dim) {
  const auto d = static_cast<std::size_t>(dim);
  for (std::size_t r = 0; r < positions.size() && (r + 1) * d <= v.size(); ++r) {
    double ss = 0;
    for (std::size_t i = r * d; i < (r + 1) * d; ++i) ss += static_cast<double>(v[i]) * v[i];
    if (std::isfinite(ss) && ss > FLT_MAX) return std::make_pair(positions[r], std::sqrt(ss));
  }
  return std::nullopt;
}

// Flags a row the rules left alone when the engine's record overflows an RMSNorm.
void flag_norm_overflow(DiagnosisRow& row, const HiddenStates& e, const HiddenStates& r,
                        const std::vector<float>& e_rec, const std::vector<float>& r_rec, DiagnosisResult& d) {
  if (row.flagged) return;
  const auto eo = norm_overflow(e_rec, e.positions, e.emb_dim);
  if (!eo) return;
  using verify_detail::fmt_g;
  const bool both = norm_overflow(r_rec, r.positions, r.emb_dim).has_value();
  row.flagged = true;
  row.reason = "position " + std::to_string(eo->first) + "'s hidden state has norm " + fmt_g(eo->second, 3) +
               ": its square overflows fp32, so the RMSNorm reading it outputs zeros (" +
               (both ? "on both sides: the model's weights produce it; llmport check --scan-values names an "
                       "extreme weight)"
                     : "the engine's alone)");
  if (d.first_suspicious.empty()) {
    d.first_suspicious = row.name;
    d.first_suspicious_layer = row.layer;
  }
}

// A row whose record holds NaN/inf on both sides: the model computes it whatever the side
// (a stored NaN/Inf, an overflow), so no side's layer is to blame.
constexpr const char* kBothNonFinite =
    "NaN/inf on both sides: the model's weights or config produce it (llmport check --scan-values "
    "names a stored NaN/Inf)";

// Whether a record's comparison breaks the output rules (NaN/inf, min cosine, scale).
bool disagrees(const CosineStats& s, double scale_bound) {
  return s.has_nan || s.min < kFlagMinCosine || s.max_norm_dev > scale_bound;
}

bool any_non_finite(const std::vector<float>& v) {
  return std::any_of(v.begin(), v.end(), [](float x) { return !std::isfinite(x); });
}

// One recorded hidden state of both sides along the residual stream: the embedding, then
// each layer's output.
struct Record {
  std::string name;
  const std::vector<float>* e;
  const std::vector<float>* r;
  CosineStats stats;
};

// DiagnosisResult::record_inconsistency, and the index into `chain` of the record it names
// (-1 for none). A computation's error at record i carries on through the residual stream
// (record i + 1 = record i + the next layer's update), so it cannot vanish at the next
// record; a damaged record (a golden's, or a side's capture of it) does.
// `final_norm`: its comparison when both sides have one. It is RMSNorm of the last record,
// which hides a scale: the last link counts only a difference cosine sees, and compares
// relative errors.
std::pair<std::string, int> record_inconsistency(const std::vector<Record>& chain, const CosineStats* final_norm,
                                                    const std::vector<char>& flagged, double scale_bound) {
  using verify_detail::fmt_g;
  // The next record's mean |e - r| this many times smaller. Measured on every shared model,
  // fp32 and bf16 engines, each planted fault kind (rope_interleaved, wrong_rope_theta,
  // proj_scale 0.2/0.9/1.05/3, drop_qkv_bias, skip_qk_norm) at layers 0-2, against the
  // oracle and three golden sequences (~500 runs): a flagged record's difference was at
  // most 1.08x the next one's, so 4 stays 3.7x clear of them. 10 missed a golden layer
  // scaled by 1.1 against a bf16 engine, whose own rounding is 8.9x below that scale's.
  constexpr double kVanishes = 4.0;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (!any_non_finite(*chain[i].r)) continue;
    // NaN/inf on both sides of one record is what the model computes on either side (its
    // weights or config), not a damaged record: the rows say it (kBothNonFinite).
    if (any_non_finite(*chain[i].e)) break;
    return {"the reference's " + chain[i].name + " holds NaN/inf", static_cast<int>(i)};
  }
  // Only a difference some rule flags at this record or in the next row (whose update reads
  // it) is re-attributed; the next record must pass the output rules.
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    const CosineStats &a = chain[i].stats, &b = chain[i + 1].stats;
    if ((flagged[i] || flagged[i + 1]) && !disagrees(b, scale_bound) && a.mean_abs > kVanishes * b.mean_abs)
      return {chain[i].name + ": the two sides differ (mean |e - r| " + fmt_g(a.mean_abs, 3) + ", min cosine " +
                  fmt_g(a.min, 4) + ") but agree again at the " + chain[i + 1].name + " (" + fmt_g(b.mean_abs, 3) +
                  "): a computation's error carries on through the residual stream, so one side's " + chain[i].name +
                  " record is not what its forward pass used",
              static_cast<int>(i)};
  }
  // The last record against final_norm, RMSNorm of it, which removes a scale (and with it an
  // update-rule flag a scale causes): only a difference the cosine rules see counts.
  if (final_norm && !chain.empty()) {
    const CosineStats& a = chain.back().stats;
    const double prev_median = chain.size() > 1 ? chain[chain.size() - 2].stats.median : 1.0;
    const bool cosine_sees = a.min < kFlagMinCosine || prev_median - a.median > kFlagMedianDrop;
    if (cosine_sees && !disagrees(*final_norm, scale_bound) && a.mean_rel > kVanishes * final_norm->mean_rel)
      return {chain.back().name + ": the two sides differ (min cosine " + fmt_g(a.min, 4) +
                  ", mean relative error " + fmt_g(a.mean_rel, 3) + ") but agree again at the final_norm (" +
                  fmt_g(final_norm->mean_rel, 3) + "): a computation's error carries on through the final norm, " +
                  "so one side's " + chain.back().name + " record is not what its forward pass used",
              static_cast<int>(chain.size() - 1)};
  }
  return {"", -1};
}

}  // namespace

DiagnosisResult diagnose(const PrefillRecord& engine, const PrefillRecord& reference, double kl_bound) {
  const double scale_bound = single_block_rel_threshold(kl_bound);
  const HiddenStates& e = engine.hidden;
  const HiddenStates& r = reference.hidden;
  check_pair(e, r);
  const auto at = common(e.positions, r.positions);
  if (at.empty()) throw UsageError("diagnosis: the two sides share no prompt position");
  DiagnosisResult d;
  d.n_positions = static_cast<int>(at.size());
  d.engine_top1 = engine.last.token;
  d.reference_top1 = reference.last.token;
  // The residual stream's records first: a record that the next one contradicts is a
  // record's defect, not a computation's: neither its row nor the next row's update (which
  // reads it) is blamed on the engine.
  std::vector<Record> chain;
  const bool with_embedding = !e.embedding.empty() && !r.embedding.empty() &&
                              e.embedding.size() == e.layer_out[0].size() && r.embedding.size() == r.layer_out[0].size();
  if (with_embedding) chain.push_back({"embedding", &e.embedding, &r.embedding, {}});
  for (std::size_t l = 0; l < e.layer_out.size(); ++l)
    chain.push_back({"layer " + std::to_string(l) + " output", &e.layer_out[l], &r.layer_out[l], {}});
  for (Record& c : chain) c.stats = compare_at(*c.e, e.positions, *c.r, r.positions, at, e.emb_dim);
  // The final norm's rows: the engine may normalize only the last positions.
  const auto fe = final_norm_positions(e), fr = final_norm_positions(r);
  const auto fat = common(fe, fr);
  std::optional<CosineStats> fn;
  if (!fat.empty()) fn = compare_at(e.final_norm, fe, r.final_norm, fr, fat, e.emb_dim);
  // Each layer's row (its output, and its own update against its input record).
  const std::size_t off = with_embedding ? 1 : 0;
  std::vector<DiagnosisRow> rows(e.layer_out.size());
  for (std::size_t l = 0; l < rows.size(); ++l) {
    DiagnosisRow& row = rows[l];
    row.layer = static_cast<int>(l);
    row.name = "layer " + std::to_string(l);
    row.stats = chain[l + off].stats;
    const std::vector<float>* e_in = l > 0 ? &e.layer_out[l - 1] : (with_embedding ? &e.embedding : nullptr);
    const std::vector<float>* r_in = l > 0 ? &r.layer_out[l - 1] : (with_embedding ? &r.embedding : nullptr);
    if (e_in && r_in) {
      row.update = compare_at(minus(e.layer_out[l], *e_in), e.positions, minus(r.layer_out[l], *r_in), r.positions,
                              at, e.emb_dim);
      row.has_update = true;
    }
  }
  // What the rules alone would flag, per chain record (the embedding has no row of its own).
  std::vector<char> flagged(chain.size(), 0);
  {
    DiagnosisResult scratch;
    double prev = 1.0;
    for (std::size_t l = 0; l < rows.size(); ++l) {
      DiagnosisRow probe = rows[l];
      flag(probe, prev, scale_bound, scratch);
      flagged[l + off] = probe.flagged;
      prev = probe.stats.median;
    }
  }
  // The embedding is a table lookup: its record breaking the output rules is flagged too,
  // so a golden embedding that layer 0 contradicts is the golden's (scaled 1.02 it passed
  // every rule: layer 0's update reads it, and moved by 2% of the embedding still agreed).
  if (with_embedding) flagged[0] = disagrees(chain[0].stats, scale_bound);
  const auto [inconsistency, bad] = record_inconsistency(chain, fn ? &*fn : nullptr, flagged, scale_bound);
  d.record_inconsistency = inconsistency;
  const int bad_layer = bad < 0 ? -2 : bad - static_cast<int>(off);  // -1: the embedding
  d.inconsistent_layer = bad_layer;
  d.reference_non_finite = bad >= 0 && any_non_finite(*chain[static_cast<std::size_t>(bad)].r);
  double prev_median = 1.0;
  for (DiagnosisRow& row : rows) {
    if (row.layer == bad_layer) {
      row.reason = "one side's record contradicts the next one (see below)";
    } else if (row.layer == bad_layer + 1) {
      DiagnosisRow judged = row;  // its update reads the bad record
      judged.has_update = false;
      flag(judged, prev_median, scale_bound, d);
      row.flagged = judged.flagged;
      row.reason = judged.reason;
    } else {
      flag(row, prev_median, scale_bound, d);
    }
    const Record& rec = chain[static_cast<std::size_t>(row.layer) + off];
    if (row.layer != bad_layer) flag_norm_overflow(row, e, r, *rec.e, *rec.r, d);
    if (row.flagged && any_non_finite(*rec.e) && any_non_finite(*rec.r)) row.reason = kBothNonFinite;
    prev_median = row.stats.median;
    d.rows.push_back(std::move(row));
  }
  // The final norm is judged by the same rules (its input is the last layer's output, so a
  // median drop from that layer is its own): a wrong norm weight or epsilon shows only here.
  if (fn) {
    DiagnosisRow row;
    row.name = "final_norm";
    row.stats = *fn;
    const bool e_non_finite = any_non_finite(e.final_norm), r_non_finite = any_non_finite(r.final_norm);
    const bool reference_only = r_non_finite && !e_non_finite;
    if (reference_only && d.record_inconsistency.empty()) {
      d.record_inconsistency = "the reference's final_norm holds NaN/inf";
      d.inconsistent_layer = static_cast<int>(e.layer_out.size());
      d.reference_non_finite = true;
    }
    if (reference_only) row.reason = "the reference's record holds NaN/inf (see below)";
    else flag(row, prev_median, scale_bound, d);
    if (row.flagged && e_non_finite && r_non_finite) row.reason = kBothNonFinite;
    d.rows.push_back(std::move(row));
  }
  return d;
}

bool golden_record_damaged(const DiagnosisResult& vs_golden, const DiagnosisResult& vs_oracle) {
  if (vs_golden.record_inconsistency.empty()) return false;
  if (vs_golden.reference_non_finite) return true;
  const int up_to = vs_golden.inconsistent_layer + 1;  // the record that agrees again
  const int final_norm = static_cast<int>(vs_oracle.rows.size()) - 1;  // after every layer
  return vs_oracle.record_inconsistency.empty() &&
         std::none_of(vs_oracle.rows.begin(), vs_oracle.rows.end(), [&](const DiagnosisRow& r) {
           return r.flagged && (r.layer >= 0 ? r.layer : final_norm) <= up_to;
         });
}

DiagnosisResult run_diagnosis(Runner& engine, Runner& reference, const std::vector<int>& prompt_ids) {
  const PrefillRecord pe = engine.prefill(prompt_ids, true);
  const PrefillRecord pr = reference.prefill(prompt_ids, true);
  const RunnerInfo ei = engine.info(), ri = reference.info();
  // A quantized engine ("q8_0") or any non-fp32 side: the bf16 budget.
  const double kl_bound = kl_bound_for(ei.dtype == "fp32" && ei.lm_head.empty() ? DType::F32 : DType::BF16, ri.dtype);
  DiagnosisResult d = diagnose(pe, pr, kl_bound);
  d.prompt_ids = prompt_ids;
  d.engine = engine.info();
  d.reference = reference.info();
  return d;
}

double single_block_position_threshold(int head_dim) {
  if (head_dim <= 64) return 0.99;
  if (head_dim <= 128) return 0.98;
  return 0.97;
}

double single_block_rel_threshold(double kl_bound) {
  return std::sqrt(2.0 * (1.0 - kSingleBlockCosine)) * std::sqrt(kl_bound / kKlBoundBf16);
}

SingleBlockResult single_block_gate(const HiddenStates& engine, const HiddenStates& reference, int head_dim,
                                    double kl_bound) {
  if (engine.layer_out.empty() || reference.layer_out.empty())
    throw UsageError("single-block gate: a side has no layer-0 output");
  if (engine.emb_dim != reference.emb_dim)
    throw UsageError("single-block gate: emb_dim differs between the sides");
  const auto at = common(engine.positions, reference.positions);
  if (at.empty()) throw UsageError("single-block gate: the two sides share no prompt position");
  SingleBlockResult r;
  r.n_positions = static_cast<int>(at.size());
  r.position_threshold = single_block_position_threshold(head_dim);
  const double rel_max = single_block_rel_threshold(kl_bound);
  const CosineStats s = compare_at(engine.layer_out[0], engine.positions, reference.layer_out[0],
                                   reference.positions, at, engine.emb_dim);
  r.whole_cosine = s.whole;
  r.whole_rel = s.whole_rel;
  r.min_position_cosine = s.min;
  r.has_nan = s.has_nan;
  r.pass = !s.has_nan && s.whole >= kSingleBlockCosine && s.whole_rel <= rel_max && s.min >= r.position_threshold;
  using verify_detail::fmt_g;
  std::string nums = "layer 0 over " + std::to_string(r.n_positions) + " positions: whole-tensor cosine " +
                     fmt_g(s.whole, 6) + " (>= " + fmt_g(kSingleBlockCosine) + "), relative error " +
                     fmt_g(s.whole_rel, 4) + " (<= " + fmt_g(rel_max, 3) + "), per-position min cosine " +
                     fmt_g(s.min, 6) + " (>= " + fmt_g(r.position_threshold) + " for head_dim " +
                     std::to_string(head_dim) + ")";
  const auto rows_ok = [&](const HiddenStates& h) {
    return !h.embedding.empty() &&
           h.embedding.size() == static_cast<std::size_t>(h.n_rows()) * static_cast<std::size_t>(h.emb_dim);
  };
  if (rows_ok(engine) && rows_ok(reference)) {
    const CosineStats e =
        compare_at(engine.embedding, engine.positions, reference.embedding, reference.positions, at, engine.emb_dim);
    r.embedding_cosine = e.whole;
    r.embedding_rel = e.whole_rel;
    r.has_nan = r.has_nan || e.has_nan;
    r.pass = r.pass && !e.has_nan && e.whole >= kSingleBlockCosine && e.whole_rel <= rel_max;
    nums += "; embedding cosine " + fmt_g(e.whole, 6) + ", relative error " + fmt_g(e.whole_rel, 4);
  }
  r.message = r.has_nan ? "NaN/inf in the layer-0 output or embedding; " + nums : nums;
  return r;
}

SingleBlockResult run_single_block_gate(Runner& engine, Runner& reference, const std::vector<int>& prompt_ids,
                                        int head_dim, double kl_bound) {
  const PrefillRecord pe = engine.prefill(prompt_ids, true);
  const PrefillRecord pr = reference.prefill(prompt_ids, true);
  return single_block_gate(pe.hidden, pr.hidden, head_dim, kl_bound);
}

nlohmann::json SingleBlockResult::to_json() const {
  return {{"pass", pass},
          {"whole_cosine", whole_cosine},
          {"min_position_cosine", min_position_cosine},
          {"whole_threshold", kSingleBlockCosine},
          {"whole_rel", whole_rel},
          {"rel_threshold", single_block_rel_threshold()},
          {"embedding_cosine", embedding_cosine},
          {"embedding_rel", embedding_rel},
          {"position_threshold", position_threshold},
          {"has_nan", has_nan},
          {"n_positions", n_positions},
          {"message", message}};
}

}  // namespace llmport
