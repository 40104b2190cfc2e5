// Print precision of a record file's logits (print_digits.hpp).
#include "verify/print_digits.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

namespace llmport::verify_detail {

namespace {

// Significant digits and decimal exponent of the shortest decimal that reads back as `v`
// (what a printer that wrote fewer digits left: "17.7994" -> {6, 1}).
std::pair<int, int> shortest_digits(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string_view s(buf, static_cast<std::size_t>(r.ptr - buf));
  const std::size_t e = s.find('e');
  int digits = 0;
  for (std::size_t i = 0; i < e; ++i) digits += (s[i] >= '0' && s[i] <= '9') ? 1 : 0;
  int exponent = 0;
  std::from_chars(s.data() + e + (s[e + 1] == '+' ? 2 : 1), s.data() + s.size(), exponent);
  return {digits, exponent};
}

enum class Kind { None, Logsumexp, Logits };

Kind kind_of(const std::string& key) {
  if (key == "logsumexp") return Kind::Logsumexp;
  if (key == "logit" || key == "logits" || key == "last_logits" || key == "prompt_last_logits") return Kind::Logits;
  return Kind::None;
}

struct Scan {
  PrintDigits d;
  bool any = false;
  void add(double v) {
    if (v == 0.0 || !std::isfinite(v)) return;
    const auto [digits, exponent] = shortest_digits(v);
    d.significant = any ? std::max(d.significant, digits) : digits;
    d.last_exponent = any ? std::min(d.last_exponent, exponent - digits + 1) : exponent - digits + 1;
    any = true;
  }
  PrintDigits result() const { return any ? d : PrintDigits{}; }
};

void scan(const nlohmann::json& j, Kind kind, Scan& lse, Scan& logits) {
  if (j.is_object()) {
    for (const auto& [key, v] : j.items()) scan(v, kind_of(key), lse, logits);
  } else if (j.is_array()) {
    for (const auto& v : j) scan(v, kind, lse, logits);
  } else if (j.is_number() && kind != Kind::None) {
    (kind == Kind::Logsumexp ? lse : logits).add(j.get<double>());
  }
}

}  // namespace

double PrintDigits::half_unit(double v) const {
  const int e = v == 0.0 ? last_exponent : static_cast<int>(std::floor(std::log10(std::abs(v))));
  return 0.5 * std::pow(10.0, std::max(e - significant + 1, last_exponent));
}

SequenceDigits scan_print_digits(const nlohmann::json& sequence) {
  Scan lse, logits;
  scan(sequence, Kind::None, lse, logits);
  return {lse.result(), logits.result()};
}

void set_print_half_units(StepRecord& st, const SequenceDigits& d) {
  st.logit_half_unit = 0.0;
  st.top_half_units.clear();
  for (const TopEntry& e : st.top) {
    st.top_half_units.push_back(d.logits.half_unit(e.logit));
    if (static_cast<double>(st.top[0].logit) - e.logit <= kPrintMassWindow)
      st.logit_half_unit = std::max(st.logit_half_unit, st.top_half_units.back());
  }
  st.lse_half_unit = st.logsumexp ? d.logsumexp.half_unit(*st.logsumexp) : 0.0;
}

}  // namespace llmport::verify_detail
