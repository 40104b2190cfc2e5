// What a verify verdict may claim about its reference: provenance (who the file says
// produced it), content (whether it is llmport's own output copied), the KL bound the
// run's dtypes allow, and the verdict line with its caps. Rules: docs/verification.md.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <unicode/uchar.h>
#include <unicode/uspoof.h>
#include <utf8proc.h>

#include "llmport/error.hpp"
#include "llmport/verify.hpp"

namespace llmport {

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}
bool same_bits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }
}  // namespace

namespace {
// The precisions that check an fp32 engine at fp32 precision. Anything else a reference
// states (bf16, fp16, tf32, fp8, int8, "mixed", ...) is lower or unknown, and an unknown
// claim must not earn the tight bound's plain PASS: it gets the bf16 bound and the cap.
// Several statements ("float32; bfloat16") are judged by the lowest.
bool full_precision(const std::string& stated) {
  std::string s = lower(stated);
  s.erase(std::remove_if(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); }), s.end());
  if (s.empty()) return true;  // unstated: held to the tighter bound
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(';', start);
    if (end == std::string::npos) end = s.size();
    std::string part = s.substr(start, end - start);
    if (part.rfind("torch.", 0) == 0) part = part.substr(6);
    if (part.rfind("numpy.", 0) == 0) part = part.substr(6);
    static const std::set<std::string> full = {"float32", "fp32", "f32", "float", "float64", "fp64", "f64", "double"};
    if (!full.contains(part)) return false;
    start = end + 1;
  }
  return true;
}
}  // namespace

double kl_bound_for(DType engine_dtype, const std::string& reference_dtype) {
  return engine_dtype == DType::F32 && full_precision(reference_dtype) ? kKlBoundFp32 : kKlBoundBf16;
}

double kernel_kl_bound_for(DType base) { return kl_bound_for(base, ""); }

KldGate kld_gate_defaults(QuantType quant) {
  switch (quant) {
    case QuantType::Q8_0: return {2e-3, 0.97};
    case QuantType::Q4_0: return {0.15, 0.78};
    case QuantType::None: break;
  }
  throw UsageError("the KLD gate is for quantized dtypes (q8_0, q4_0) only");
}

KldGate derived_kld_gate(const KldGate& d, double predicted_mean_kl, double predicted_top1) {
  KldGate g = d;
  if (std::isfinite(predicted_mean_kl))
    g.max_mean_kl = std::max(d.max_mean_kl, kQuantCostKlFactor * predicted_mean_kl);
  if (std::isfinite(predicted_top1))
    g.min_top1 = std::min(d.min_top1, std::max(kMinTop1Floor, 1.0 - kQuantCostTop1Factor * (1.0 - predicted_top1)));
  return g;
}

namespace {
// One UTF-8 code point from s at i (advancing i); malformed bytes read as themselves.
char32_t next_code_point(const std::string& s, std::size_t& i) {
  const auto b = static_cast<unsigned char>(s[i++]);
  const int extra = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : 0;
  char32_t cp = extra == 0 ? b : b & (0x3F >> extra);
  for (int k = 0; k < extra && i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i++]) & 0x3F);
  return cp;
}

std::string utf8_of(char32_t cp) {
  utf8proc_uint8_t b[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), b);
  return std::string(reinterpret_cast<const char*>(b), static_cast<std::size_t>(n));
}

// utf8proc_map with `opts`; a text utf8proc refuses (malformed UTF-8) is left as it is.
std::string utf8proc_mapped(const std::string& s, int opts) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &out,
                                          static_cast<utf8proc_option_t>(opts));
  if (n < 0) return s;
  std::string r(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
  std::free(out);
  return r;
}

// The letters a non-ASCII code point is drawn like, from Unicode's confusables data (UTS #39
// skeletons, ICU's uspoof): a code point reads as the ASCII letter x when its skeleton is
// the skeleton of x, of the small capital X ("\u029f" is LATIN LETTER SMALL CAPITAL L) or of X,
// tried in that order (so "\u0399", whose skeleton is that of both l and I, reads as l). The
// prototypes the data keeps for Cyrillic and Greek small letters are small capitals
// ("\u0442" is drawn like "\u1d1b"), which is why those count as the letter too.
class LookAlikes {
 public:
  static const LookAlikes& get() {
    static const LookAlikes instance;
    return instance;
  }

  // The ASCII letters and digits `cp` (non-ASCII) reads as, or "" for none: its case
  // variants count too (the reader sees either). A skeleton made of ASCII letters and
  // digits only ("\u01c1" is "ll") reads as those.
  std::string letters(char32_t cp) const {
    for (const UChar32 v : {static_cast<UChar32>(cp), u_foldCase(static_cast<UChar32>(cp), U_FOLD_CASE_DEFAULT),
                            u_toupper(static_cast<UChar32>(cp))}) {
      const std::string key = skeleton(utf8_of(static_cast<char32_t>(v)));
      if (const auto it = by_skeleton_.find(key); it != by_skeleton_.end()) return std::string(1, it->second);
      if (!key.empty() && std::all_of(key.begin(), key.end(), [](char c) { return c > 0 && std::isalnum(static_cast<unsigned char>(c)); }))
        return lower(key);
    }
    return "";
  }

  LookAlikes(const LookAlikes&) = delete;
  LookAlikes& operator=(const LookAlikes&) = delete;
  ~LookAlikes() { uspoof_close(checker_); }

 private:
  LookAlikes() {
    UErrorCode err = U_ZERO_ERROR;
    checker_ = uspoof_open(&err);
    if (U_FAILURE(err)) throw Error(std::string("ICU uspoof_open failed: ") + u_errorName(err));
    for (char x = 'a'; x <= 'z'; ++x) by_skeleton_.emplace(skeleton(std::string(1, x)), x);
    for (char x = 'a'; x <= 'z'; ++x) {
      const std::string name = std::string("LATIN LETTER SMALL CAPITAL ") + static_cast<char>(std::toupper(x));
      err = U_ZERO_ERROR;
      const UChar32 small = u_charFromName(U_UNICODE_CHAR_NAME, name.c_str(), &err);
      if (U_SUCCESS(err)) by_skeleton_.emplace(skeleton(utf8_of(static_cast<char32_t>(small))), x);
    }
    for (char x = 'a'; x <= 'z'; ++x)
      by_skeleton_.emplace(skeleton(std::string(1, static_cast<char>(std::toupper(x)))), x);
  }

  // The UTS #39 skeleton of `s`, marks stripped ("\u0142" is l with a stroke: l).
  std::string skeleton(const std::string& s) const {
    std::string out(4 * s.size() + 16, '\0');
    UErrorCode err = U_ZERO_ERROR;
    int32_t n = uspoof_getSkeletonUTF8(checker_, 0, s.c_str(), static_cast<int32_t>(s.size()), out.data(),
                                       static_cast<int32_t>(out.size()), &err);
    if (err == U_BUFFER_OVERFLOW_ERROR) {
      out.assign(static_cast<std::size_t>(n), '\0');
      err = U_ZERO_ERROR;
      n = uspoof_getSkeletonUTF8(checker_, 0, s.c_str(), static_cast<int32_t>(s.size()), out.data(), n, &err);
    }
    if (U_FAILURE(err)) return s;  // malformed UTF-8: left as it is
    out.resize(static_cast<std::size_t>(n));
    return utf8proc_mapped(out, UTF8PROC_COMPOSE | UTF8PROC_STRIPMARK);
  }

  USpoofChecker* checker_ = nullptr;
  std::map<std::string, char> by_skeleton_;  // skeleton -> the ASCII letter it is drawn like
};

// NFKC with marks stripped and default-ignorables dropped (utf8proc): the mathematical
// alphanumerics ("\U0001d5c5"), fullwidth forms, ligatures, letterlike and enclosed forms
// read as their plain letters, "l\u0301" as "l", a zero-width space or soft hyphen as nothing.
// Case is kept: the confusables data tells "\u0399" (drawn like I and l) from "\u03b9" (like i).
std::string compatibility_folded(const std::string& s) {
  return utf8proc_mapped(s, UTF8PROC_COMPAT | UTF8PROC_COMPOSE | UTF8PROC_STRIPMARK | UTF8PROC_IGNORE);
}

// One folded code point as the ASCII letters or digits it reads as (0 and o, 1 and l the
// same; LookAlikes for non-ASCII), or "" for a separator. An ASCII capital I, drawn as an l
// in sans-serif type ("IImport"), reads as l only with `capital_i_as_l`.
std::string fold_char(char32_t cp, bool capital_i_as_l) {
  if (cp >= 0x80) return LookAlikes::get().letters(cp);
  char c = cp == 'I' && capital_i_as_l ? 'l' : static_cast<char>(std::tolower(static_cast<int>(cp)));
  if (c == '0') c = 'o';
  else if (c == '1') c = 'l';
  return std::isalnum(static_cast<unsigned char>(c)) ? std::string(1, c) : std::string();
}

// "rn" is drawn like "m" (the confusables data's own example): read as m.
std::string rn_as_m(std::string w) {
  for (std::size_t at = w.find("rn"); at != std::string::npos; at = w.find("rn", at)) w.replace(at, 2, "m");
  return w;
}

// The text after compatibility_folded as words of fold_char letters, split at every
// separator: "LLM; portable" is "llm", "portable". `capital_i_as_l` applies to whole words
// only: run together, "XML Import" would read "xmllmport". With `backwards` the code points
// are read in reverse order (a right-to-left override shows them so).
std::vector<std::string> words_of(const std::string& raw, bool capital_i_as_l, bool backwards = false) {
  const std::string s = compatibility_folded(raw);
  std::vector<char32_t> cps;
  for (std::size_t i = 0; i < s.size();) cps.push_back(next_code_point(s, i));
  if (backwards) std::reverse(cps.begin(), cps.end());
  std::vector<std::string> words(1);
  for (const char32_t cp : cps) {
    if (const std::string l = fold_char(cp, capital_i_as_l); !l.empty()) words.back() += l;
    else if (!words.back().empty()) words.emplace_back();
  }
  for (std::string& w : words) w = rn_as_m(w);
  return words;
}

// The text as letters and digits only: "LLM-P0rt", "llm\u200bport", "l l m p o r t",
// "llmp\u043ert", mathematical letters and small capitals all read "llmport".
std::string letters_of(const std::string& raw, bool backwards = false) {
  std::string out;
  for (const std::string& w : words_of(raw, /*capital_i_as_l=*/false, backwards)) out += w;
  return rn_as_m(out);
}

// A right-to-left override or embedding ("\u202etropmll") shows the letters after it
// reversed: such a text is also read backwards.
bool has_rtl_override(const std::string& s) {
  for (const char* mark : {"\u202E", "\u202B", "\u2067", "\u200F"})
    if (s.find(mark) != std::string::npos) return true;
  return false;
}
}  // namespace

bool names_llmport(const std::string& producer) {
  if (letters_of(producer).find("llmport") != std::string::npos || mentions_llmport(producer)) return true;
  return has_rtl_override(producer) && letters_of(producer, /*backwards=*/true).find("llmport") != std::string::npos;
}

bool mentions_llmport(const std::string& text) {
  const bool rtl = has_rtl_override(text);
  for (int pass = 0; pass < (rtl ? 2 : 1); ++pass)
    for (const std::string& w : words_of(text, /*capital_i_as_l=*/true, /*backwards=*/pass == 1))
      if (w.rfind("llmport", 0) == 0 &&
          std::all_of(w.begin() + 7, w.end(), [](char c) { return c == 'o' || c == 'l' || std::isdigit(static_cast<unsigned char>(c)); }))
        return true;
  return false;
}

namespace {
// A producer that says nothing: "unknown", "n/a", "none", "TBD" named no program, yet they
// counted as an independent one.
bool names_nothing(const std::string& producer) {
  static const char* const kPlaceholders[] = {
      "",          "unknown",   "na",      "none",     "null",          "nil",          "tbd",
      "todo",      "unspecified", "undefined", "anonymous", "unnamed",  "noname",       "notapplicable",
      "notavailable", "notgiven", "notknown", "notstated", "producer", "reference",    "nobody"};
  const std::string l = letters_of(producer);
  for (const char* ph : kPlaceholders)
    if (l == ph) return true;
  return false;
}
}  // namespace

ReferenceProvenance assess_provenance(const RecordFile& rf) {
  ReferenceProvenance p;
  p.producer = rf.producer;
  if (names_nothing(rf.producer))
    p.finding = "no provenance: " + rf.path.filename().string() + " names no producer";
  else if (names_llmport(rf.producer))
    p.finding = "provenance: produced by llmport (" + rf.producer + ")";
  else if (!rf.independent)
    p.finding = "provenance: " + rf.path.filename().string() + " says \"independent\": false";
  p.independent = p.finding.empty();
  return p;
}

namespace {
double ulp_of(float v) {
  const float a = std::abs(v);
  return static_cast<double>(std::nextafter(a, std::numeric_limits<float>::infinity()) - a);
}
}  // namespace

SelfMatchCount count_self_matching(std::span<const float> reference, std::span<const float> llmport) {
  SelfMatchCount c;
  const std::size_t n = std::min(reference.size(), llmport.size());
  // The shifts c each entry allows: reference = float(llmport + c), the sum rounded once to
  // the nearest float (in float or in double alike), so c lies within half an ulp of the
  // reference value around d = reference - llmport; all entries' ranges must meet.
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity(), tol_max = 0;
  for (std::size_t i = 0; i < n; ++i) {
    c.identical += same_bits(reference[i], llmport[i]) ? 1 : 0;
    const double d = static_cast<double>(reference[i]) - static_cast<double>(llmport[i]);
    const double tol = 0.5 * ulp_of(reference[i]) * (1 + 1e-9);
    lo = std::max(lo, d - tol);
    hi = std::min(hi, d + tol);
    tol_max = std::max(tol_max, tol);
  }
  // A shift within a few ulps is an independent computation's rounding, not a constant.
  const bool shifted = n >= 3 && lo <= hi && std::min(std::abs(lo), std::abs(hi)) > 8 * tol_max && (lo > 0) == (hi > 0);
  if (shifted) c.shifted = static_cast<int64_t>(n) - c.identical;
  return c;
}

bool count_self_match(const StepRecord& reference, std::span<const float> logits, SelfMatch& m, int k) {
  const std::size_t n = std::min<std::size_t>(reference.top.size(), static_cast<std::size_t>(std::max(k, 0)));
  std::vector<float> ref, own;
  for (std::size_t i = 0; i < n; ++i) {
    const TopEntry& e = reference.top[i];
    if (e.id < 0 || static_cast<std::size_t>(e.id) >= logits.size()) continue;
    ref.push_back(e.logit);
    own.push_back(logits[static_cast<std::size_t>(e.id)]);
  }
  const SelfMatchCount c = count_self_matching(ref, own);
  if (m.fp32) {
    m.reference.insert(m.reference.end(), ref.begin(), ref.end());
    m.own.insert(m.own.end(), own.begin(), own.end());
    m.step_end.push_back(static_cast<int>(m.own.size()));
  }
  m.compared += static_cast<int64_t>(ref.size());
  m.identical += c.identical;
  m.shifted += c.shifted;
  // A whole-step copy needs 3 entries or more: one honest fp32 logit often equals one of
  // ~10 computations' bit for bit, so a top-1-only golden read as copied step after step.
  return ref.size() >= 3 && c.identical + c.shifted == static_cast<int64_t>(ref.size());
}

int VerifyResult::distinct_prompts() const {
  std::set<std::vector<int>> ids;
  for (const auto& p : prompts) ids.insert(p.prompt_ids);
  return static_cast<int>(ids.size());
}

int VerifyResult::distinct_steps() const {
  std::set<std::vector<int>> inputs;
  for (const auto& p : prompts) {
    std::vector<int> in = p.prompt_ids;
    const std::size_t n = std::min(p.reference_tokens.size(), static_cast<std::size_t>(std::max(n_steps, 0)));
    for (std::size_t i = 0; i < n; ++i) {
      inputs.insert(in);
      in.push_back(p.reference_tokens[i]);
    }
  }
  return static_cast<int>(inputs.size());
}

std::string VerifyResult::verdict() const {
  if (!pass) return "FAIL";
  return caps.empty() ? "PASS" : "PASS-with-warnings";
}

std::string VerifyResult::verdict_line() const {
  std::string v = verdict();
  if (v != "PASS-with-warnings") return v;
  v += " (";
  for (std::size_t i = 0; i < caps.size(); ++i) v += (i ? "; " : "") + caps[i];
  return v + ")";
}

}  // namespace llmport
