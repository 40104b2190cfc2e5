// What a verify verdict may claim about its reference: provenance (who the file says
// produced it), content (whether it is llmport's own output copied), the KL bound the
// run's dtypes allow, and the verdict line with its caps. Rules: docs/verification.md.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

KldGate kld_gate_defaults(QuantType quant) {
  switch (quant) {
    case QuantType::Q8_0: return {2e-3, 0.97};
    case QuantType::Q4_0: return {0.15, 0.78};
    case QuantType::None: break;
  }
  throw UsageError("the KLD gate is for quantized dtypes (q8_0, q4_0) only");
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

// The ASCII letter a non-ASCII look-alike stands for: fullwidth forms, and the Cyrillic and
// Greek letters drawn like Latin ones ("llmp\u043ert" is "llmport" on screen); 0 for none.
char ascii_look_alike(char32_t cp) {
  if (cp >= 0xFF21 && cp <= 0xFF3A) return static_cast<char>('a' + (cp - 0xFF21));
  if (cp >= 0xFF41 && cp <= 0xFF5A) return static_cast<char>('a' + (cp - 0xFF41));
  static const std::pair<char32_t, char> table[] = {
      {0x0430, 'a'}, {0x0410, 'a'}, {0x0435, 'e'}, {0x0415, 'e'}, {0x043E, 'o'}, {0x041E, 'o'}, {0x0440, 'p'},
      {0x0420, 'p'}, {0x0441, 'c'}, {0x0421, 'c'}, {0x0445, 'x'}, {0x0425, 'x'}, {0x0443, 'y'}, {0x0456, 'i'},
      {0x0406, 'l'}, {0x0458, 'j'}, {0x04CF, 'l'}, {0x04C0, 'l'}, {0x0422, 't'}, {0x0442, 't'}, {0x041C, 'm'},
      {0x043C, 'm'}, {0x041A, 'k'}, {0x043A, 'k'}, {0x041D, 'h'}, {0x0432, 'b'}, {0x0412, 'b'}, {0x0455, 's'},
      {0x03BF, 'o'}, {0x039F, 'o'}, {0x03C1, 'p'}, {0x03A1, 'p'}, {0x03B9, 'i'}, {0x0399, 'l'}, {0x03C4, 't'},
      {0x03A4, 't'}, {0x039C, 'm'}, {0x03BA, 'k'}, {0x039A, 'k'}, {0x03BD, 'v'}, {0x03B1, 'a'}, {0x0391, 'a'},
      {0x2113, 'l'}, {0x217C, 'l'}, {0x2160, 'l'}, {0x217F, 'm'}, {0x01C0, 'l'}, {0x05C0, 'l'}, {0x05D5, 'l'},
      {0x0585, 'o'}, {0x0555, 'o'}, {0x0433, 'r'}, {0x0413, 'r'}, {0x0501, 'd'}, {0x0261, 'g'}};
  for (const auto& [from, to] : table)
    if (from == cp) return to;
  return 0;
}

// Small capitals and IPA letters drawn like Latin capitals ("\u029f\u029f\u1d0d\u1d18\u1d0f\u0280\u1d1b"):
// NFKC leaves them as they are.
char small_capital(char32_t cp) {
  static const std::pair<char32_t, char> table[] = {
      {0x1D00, 'a'}, {0x0299, 'b'}, {0x1D04, 'c'}, {0x1D05, 'd'}, {0x1D07, 'e'}, {0xA730, 'f'}, {0x0262, 'g'},
      {0x029C, 'h'}, {0x026A, 'i'}, {0x1D0A, 'j'}, {0x1D0B, 'k'}, {0x029F, 'l'}, {0x1D0D, 'm'}, {0x0274, 'n'},
      {0x1D0F, 'o'}, {0x1D18, 'p'}, {0x01EB, 'q'}, {0x0280, 'r'}, {0xA731, 's'}, {0x1D1B, 't'}, {0x1D1C, 'u'},
      {0x1D20, 'v'}, {0x1D21, 'w'}, {0x028F, 'y'}, {0x1D22, 'z'}, {0x0131, 'i'}, {0x0269, 'i'}};
  for (const auto& [from, to] : table)
    if (from == cp) return to;
  return 0;
}

// NFKC with case folding, marks stripped and default-ignorables dropped (utf8proc): the
// mathematical alphanumerics ("\U0001d5c5"), fullwidth forms, ligatures, letterlike and
// enclosed forms read as their plain letters, "l\u0301" as "l", a zero-width space or
// soft hyphen as nothing. Malformed UTF-8 is left as it is (read byte by byte below).
std::string compatibility_folded(const std::string& s) {
  utf8proc_uint8_t* out = nullptr;
  const auto opts = static_cast<utf8proc_option_t>(UTF8PROC_COMPAT | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD |
                                                   UTF8PROC_STRIPMARK | UTF8PROC_IGNORE);
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()), &out, opts);
  if (n < 0) return s;
  std::string r(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
  std::free(out);
  return r;
}

// The producer as letters and digits only, look-alikes read as the letters they mimic:
// "LLM-P0rt", "llm\u200bport", "l l m p o r t", "llmp\u043ert", "\U0001d5c5\U0001d5c5\U0001d5c6..." and small
// capitals all read "llmport".
// One folded code point as the ASCII letter or digit it reads as (0, o and 1, l folded), or
// 0 for a separator.
char fold_char(char32_t cp) {
  char c = cp < 0x80 ? static_cast<char>(std::tolower(static_cast<int>(cp))) : ascii_look_alike(cp);
  if (c == 0 && cp >= 0x80) c = small_capital(cp);
  if (c == '0') c = 'o';
  else if (c == '1') c = 'l';
  return std::isalnum(static_cast<unsigned char>(c)) ? c : 0;
}

// The text after compatibility_folded as words of fold_char letters, split at every
// separator: "LLM; portable" is "llm", "portable". With `capital_i_as_l` an ASCII capital I,
// drawn as an l in sans-serif type ("IImport"), reads as l (whole words only: run together,
// "XML Import" would read "xmllmport").
std::vector<std::string> words_of(const std::string& raw, bool capital_i_as_l = false) {
  std::string pre = raw;
  if (capital_i_as_l) std::replace(pre.begin(), pre.end(), 'I', 'l');
  const std::string s = compatibility_folded(pre);
  std::vector<std::string> words(1);
  for (std::size_t i = 0; i < s.size();) {
    if (const char c = fold_char(next_code_point(s, i))) words.back() += c;
    else if (!words.back().empty()) words.emplace_back();
  }
  return words;
}

// The text as letters and digits only: "LLM-P0rt", "llm\u200bport", "l l m p o r t",
// "llmp\u043ert", mathematical letters and small capitals all read "llmport".
std::string letters_of(const std::string& raw) {
  std::string out;
  for (const std::string& w : words_of(raw)) out += w;
  return out;
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
  std::string letters = letters_of(producer);
  if (letters.find("llmport") != std::string::npos || mentions_llmport(producer)) return true;
  if (!has_rtl_override(producer)) return false;
  std::reverse(letters.begin(), letters.end());
  return letters.find("llmport") != std::string::npos;
}

bool mentions_llmport(const std::string& text) {
  const bool rtl = has_rtl_override(text);
  for (std::string w : words_of(text, /*capital_i_as_l=*/true)) {
    for (int pass = 0; pass < (rtl ? 2 : 1); ++pass) {
      if (w.rfind("llmport", 0) == 0 &&
          std::all_of(w.begin() + 7, w.end(), [](char c) { return c == 'o' || c == 'l' || std::isdigit(static_cast<unsigned char>(c)); }))
        return true;
      std::reverse(w.begin(), w.end());
    }
  }
  return false;
}

ReferenceProvenance assess_provenance(const RecordFile& rf) {
  ReferenceProvenance p;
  p.producer = rf.producer;
  if (letters_of(rf.producer).empty())
    p.finding = "no provenance: " + rf.path.filename().string() + " names no producer";
  else if (names_llmport(rf.producer))
    p.finding = "provenance: produced by llmport (" + rf.producer + ")";
  else if (!rf.independent)
    p.finding = "provenance: " + rf.path.filename().string() + " says \"independent\": false";
  p.independent = p.finding.empty();
  return p;
}

void count_self_match(const StepRecord& reference, std::span<const float> logits, SelfMatch& m, int k) {
  const std::size_t n = std::min<std::size_t>(reference.top.size(), static_cast<std::size_t>(std::max(k, 0)));
  for (std::size_t i = 0; i < n; ++i) {
    const TopEntry& e = reference.top[i];
    if (e.id < 0 || static_cast<std::size_t>(e.id) >= logits.size()) continue;
    m.identical += same_bits(e.logit, logits[static_cast<std::size_t>(e.id)]) ? 1 : 0;
    ++m.compared;
  }
}

int VerifyResult::distinct_prompts() const {
  std::set<std::vector<int>> ids;
  for (const auto& p : prompts) ids.insert(p.prompt_ids);
  return static_cast<int>(ids.size());
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
