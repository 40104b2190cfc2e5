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

bool logit_key(const std::string& key) {
  return key == "logsumexp" || key.find("logit") != std::string::npos;
}

void scan(const nlohmann::json& j, bool under_logit_key, PrintDigits& d, bool& any) {
  if (j.is_object()) {
    for (const auto& [key, v] : j.items()) scan(v, under_logit_key || logit_key(key), d, any);
  } else if (j.is_array()) {
    for (const auto& v : j) scan(v, under_logit_key, d, any);
  } else if (under_logit_key && j.is_number()) {
    const double v = j.get<double>();
    if (v == 0.0 || !std::isfinite(v)) return;
    const auto [digits, exponent] = shortest_digits(v);
    d.significant = any ? std::max(d.significant, digits) : digits;
    d.last_exponent = any ? std::min(d.last_exponent, exponent - digits + 1) : exponent - digits + 1;
    any = true;
  }
}

}  // namespace

double PrintDigits::half_unit(double v) const {
  const int e = v == 0.0 ? last_exponent : static_cast<int>(std::floor(std::log10(std::abs(v))));
  return 0.5 * std::pow(10.0, std::max(e - significant + 1, last_exponent));
}

PrintDigits scan_print_digits(const nlohmann::json& j) {
  PrintDigits d;
  bool any = false;
  scan(j, false, d, any);
  return any ? d : PrintDigits{};
}

void set_print_half_units(StepRecord& st, const PrintDigits& d) {
  st.logit_half_unit = 0.0;
  for (const TopEntry& e : st.top) st.logit_half_unit = std::max(st.logit_half_unit, d.half_unit(e.logit));
  st.lse_half_unit = st.logsumexp ? d.half_unit(*st.logsumexp) : 0.0;
}

}  // namespace llmport::verify_detail
