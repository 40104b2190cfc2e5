// Diagnosis output: JSON, a markdown table, and an SVG plot of cosine per layer.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "llmport/diagnosis.hpp"
#include "verify/format.hpp"

namespace llmport {
using verify_detail::fmt_g;

namespace {
nlohmann::json runner_json(const RunnerInfo& i) {
  return {{"kind", i.kind}, {"backend", i.backend}, {"isa", i.isa}, {"dtype", i.dtype},
          {"independent", i.independent}, {"source", i.source}};
}
std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}
std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}
}  // namespace

std::string diagnosis_blind_spot(const FaultInjection& fault) {
  using K = FaultInjection::Kind;
  if (fault.kind == K::KvOffByOne)
    return "the planted fault " + fault.spec +
           " acts on decode steps only; diagnosis compares prefill hidden states (verify's teacher-forced steps see it)";
  if (fault.kind == K::LogitScale)
    return "the planted fault " + fault.spec +
           " acts on the logits only, after the final norm; diagnosis compares hidden states (verify's KL gate sees it)";
  return "";
}

nlohmann::json DiagnosisResult::to_json() const {
  nlohmann::ordered_json j;
  j["format"] = "llmport-diagnosis/1";
  j["model"] = model;
  j["prompt"] = prompt ? nlohmann::json(*prompt) : nlohmann::json(nullptr);
  j["prompt_ids"] = prompt_ids;
  j["engine"] = runner_json(engine);
  j["reference"] = runner_json(reference);
  j["planted_fault"] = planted_fault.empty() ? nlohmann::json(nullptr) : nlohmann::json(planted_fault);
  j["blind_spot"] = blind_spot.empty() ? nlohmann::json(nullptr) : nlohmann::json(blind_spot);
  j["n_positions"] = n_positions;
  j["engine_top1"] = engine_top1;
  j["reference_top1"] = reference_top1;
  j["first_suspicious_layer"] = first_suspicious_layer >= 0 ? nlohmann::json(first_suspicious_layer) : nlohmann::json(nullptr);
  j["first_suspicious"] = first_suspicious.empty() ? nlohmann::json(nullptr) : nlohmann::json(first_suspicious);
  j["record_inconsistency"] =
      record_inconsistency.empty() ? nlohmann::json(nullptr) : nlohmann::json(record_inconsistency);
  j["flag_rules"] = {{"min_cosine_below", kFlagMinCosine},
                     {"median_drop_above", kFlagMedianDrop},
                     {"update_median_cosine_below", kFlagUpdateMedianCosine}};
  nlohmann::json rs = nlohmann::json::array();
  for (const auto& r : rows) {
    const auto& s = r.stats;
    rs.push_back({{"name", r.name},
                  {"layer", r.layer >= 0 ? nlohmann::json(r.layer) : nlohmann::json(nullptr)},
                  {"cos_min", s.min},
                  {"cos_p5", s.p5},
                  {"cos_median", s.median},
                  {"cos_mean", s.mean},
                  {"cos_whole", s.whole},
                  {"max_abs", s.max_abs},
                  {"mean_abs", s.mean_abs},
                  {"max_rel", s.max_rel},
                  {"max_norm_dev", s.max_norm_dev},
                  {"mean_rel", s.mean_rel},
                  {"has_nan", s.has_nan},
                  {"update_cos_min", r.has_update ? nlohmann::json(r.update.min) : nlohmann::json(nullptr)},
                  {"update_cos_median", r.has_update ? nlohmann::json(r.update.median) : nlohmann::json(nullptr)},
                  {"flagged", r.flagged},
                  {"reason", r.reason}});
  }
  j["rows"] = rs;
  return j;
}

std::string DiagnosisResult::to_markdown() const {
  std::string s = "# llmport diagnosis\n\n";
  s += "- model: `" + model + "`\n";
  if (prompt) s += "- prompt: \"" + *prompt + "\"\n";
  s += "- prompt ids: " + verify_detail::format_ids(prompt_ids) + "\n";
  s += "- engine: " + engine.kind + " `" + engine.backend + "` " + engine.dtype + "; reference: " + reference.kind +
       (reference.backend.empty() ? "" : " `" + reference.backend + "`") + " " + reference.dtype +
       (reference.independent ? "" : " (not independent)") + "\n";
  if (!planted_fault.empty()) s += "- planted fault (test only): **" + planted_fault + "**\n";
  if (!blind_spot.empty()) s += "- **not visible here:** " + blind_spot + "\n";
  s += "- positions compared per layer: " + std::to_string(n_positions) + "\n";
  s += "- top-1 at the last position: engine " + std::to_string(engine_top1) + ", reference " +
       std::to_string(reference_top1) + "\n\n";
  s += "| layer | cos min | cos p5 | cos median | cos mean | max_abs | mean_abs | max_rel | mean_rel | update cos median | flag |\n";
  s += "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const auto& t = r.stats;
    s += "| " + r.name + " | " + fmt_g(t.min, 6) + " | " + fmt_g(t.p5, 6) + " | " + fmt_g(t.median, 6) + " | " +
         fmt_g(t.mean, 6) + " | " + fmt_g(t.max_abs) + " | " + fmt_g(t.mean_abs) + " | " + fmt_g(t.max_rel) + " | " +
         fmt_g(t.mean_rel) + " | " + (r.has_update ? fmt_g(r.update.median, 6) : std::string("-")) + " | " +
         (r.flagged ? "**" + r.reason + "**" : r.reason.empty() ? "" : "_" + r.reason + "_") + " |\n";
  }
  s += "\n";
  if (!record_inconsistency.empty()) s += "A record contradicts the next one: " + record_inconsistency + ".\n";
  if (first_suspicious_layer >= 0)
    s += "First suspicious layer: **" + std::to_string(first_suspicious_layer) + "**\n";
  else if (!first_suspicious.empty())
    s += "First suspicious: **" + first_suspicious + "** (every layer's output agrees)\n";
  else
    s += "No layer flagged (min cosine >= " + fmt_g(kFlagMinCosine) + ", no median drop > " +
         fmt_g(kFlagMedianDrop) + ", update median cosine >= " + fmt_g(kFlagUpdateMedianCosine) +
         ", every position's norm within the scale budget and fp32's range).\n";
  return s;
}

std::string DiagnosisResult::to_svg() const {
  const double W = 640, H = 360, L = 60, R = 20, T = 30, B = 50;
  const int n = static_cast<int>(rows.size());
  double lo = 1.0;
  for (const auto& r : rows) lo = std::min({lo, r.stats.min, r.stats.median, r.stats.mean});
  lo = std::max(-1.0, std::floor((std::min(lo, 0.95) - 0.01) * 20.0) / 20.0);
  const double hi = 1.0;
  auto x = [&](int i) { return L + (n > 1 ? (W - L - R) * i / (n - 1) : (W - L - R) / 2); };
  auto y = [&](double v) { return T + (H - T - B) * (hi - std::clamp(v, lo, hi)) / (hi - lo); };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) +
                  "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + num(L) + "\" y=\"18\" font-size=\"13\">cosine per layer (engine vs " +
       xml_escape(reference.kind) + ")</text>\n";
  for (int k = 0; k <= 4; ++k) {
    const double v = lo + (hi - lo) * k / 4;
    s += "<line x1=\"" + num(L) + "\" x2=\"" + num(W - R) + "\" y1=\"" + num(y(v)) + "\" y2=\"" + num(y(v)) +
         "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + num(L - 6) + "\" y=\"" + num(y(v) + 4) + "\" text-anchor=\"end\">" + fmt_g(v, 3) + "</text>\n";
  }
  if (kFlagMinCosine >= lo)
    s += "<line x1=\"" + num(L) + "\" x2=\"" + num(W - R) + "\" y1=\"" + num(y(kFlagMinCosine)) + "\" y2=\"" +
         num(y(kFlagMinCosine)) + "\" stroke=\"#c00\" stroke-dasharray=\"4 3\"/>\n";
  for (int i = 0; i < n; ++i)
    s += "<text x=\"" + num(x(i)) + "\" y=\"" + num(H - B + 16) + "\" text-anchor=\"middle\">" +
         xml_escape(rows[static_cast<std::size_t>(i)].layer >= 0 ? std::to_string(rows[static_cast<std::size_t>(i)].layer)
                                                                  : "norm") + "</text>\n";
  s += "<text x=\"" + num((W + L - R) / 2) + "\" y=\"" + num(H - 12) + "\" text-anchor=\"middle\">layer</text>\n";
  struct Series { const char* name; const char* color; double CosineStats::*field; };
  const Series series[] = {{"min", "#d62728", &CosineStats::min},
                           {"median", "#1f77b4", &CosineStats::median},
                           {"mean", "#2ca02c", &CosineStats::mean}};
  int si = 0;
  for (const auto& se : series) {
    std::string pts;
    for (int i = 0; i < n; ++i)
      pts += num(x(i)) + "," + num(y(rows[static_cast<std::size_t>(i)].stats.*(se.field))) + " ";
    s += "<polyline fill=\"none\" stroke=\"" + std::string(se.color) + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
    s += "<text x=\"" + num(W - R - 150 + 55 * si) + "\" y=\"18\" fill=\"" + se.color + "\">" + se.name + "</text>\n";
    ++si;
  }
  for (int i = 0; i < n; ++i)
    if (rows[static_cast<std::size_t>(i)].flagged)
      s += "<circle cx=\"" + num(x(i)) + "\" cy=\"" + num(y(rows[static_cast<std::size_t>(i)].stats.min)) +
           "\" r=\"5\" fill=\"none\" stroke=\"#c00\" stroke-width=\"2\"><title>" +
           xml_escape(rows[static_cast<std::size_t>(i)].reason) + "</title></circle>\n";
  s += "</svg>\n";
  return s;
}

}  // namespace llmport
