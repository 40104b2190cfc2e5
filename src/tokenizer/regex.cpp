#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.hpp"

#include <pcre2.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "llmport/error.hpp"
#include "tokenizer/utf8.hpp"

namespace llmport::tok {

struct Regex::Impl {
  pcre2_code* code = nullptr;
  std::string where;   // the file (tokenizer.json) the pattern came from
  std::string source;  // the pattern as written there
};

namespace {

// Oniguruma's Unicode \s is exactly the White_Space property; PCRE2's (UCP) also matches
// U+180E MONGOLIAN VOWEL SEPARATOR. Spelling the set out keeps the reference's splits.
constexpr const char* kOnigSpace =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

/// Rewrites \s (inside or outside a character class) and \S (outside one) to the
/// Oniguruma whitespace set; everything else is copied unchanged.
std::string onig_compatible(const std::string& p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      if (n == 's') {
        out += in_class ? std::string(kOnigSpace) : "[" + std::string(kOnigSpace) + "]";
      } else if (n == 'S' && !in_class) {
        out += "[^" + std::string(kOnigSpace) + "]";
      } else {
        out += c;
        out += n;
      }
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX [:name:]
      std::size_t e = p.find(":]", i + 2);
      if (e != std::string::npos) {
        out.append(p, i, e + 2 - i);
        i = e + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& source, const std::string& where) : impl_(std::make_unique<Impl>()) {
  int err = 0;
  PCRE2_SIZE off = 0;
  impl_->where = where;
  impl_->source = source.size() > 60 ? source.substr(0, 57) + "..." : source;
  const std::string pattern = onig_compatible(source);
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK | PCRE2_USE_OFFSET_LIMIT, &err, &off, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    throw ConfigError(where + ": bad regex '" + source + "' at offset " + std::to_string(off) + ": " +
                      reinterpret_cast<const char*>(buf));
  }
  // JIT is an optimisation only: the interpreter gives the same matches.
  (void)pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() {
  if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(std::string_view text, double base_s,
                                                                 double per_byte_s) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const auto start = std::chrono::steady_clock::now();
  const double budget_s = base_s + per_byte_s * static_cast<double>(text.size());
  // Per call (not per match) so that one Regex can be used by several threads; freed on
  // every way out, the errors' included.
  const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md_owner(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  const std::unique_ptr<pcre2_match_context, decltype(&pcre2_match_context_free)> mc_owner(
      pcre2_match_context_create(nullptr), &pcre2_match_context_free);
  const std::unique_ptr<pcre2_jit_stack, decltype(&pcre2_jit_stack_free)> js_owner(
      pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr), &pcre2_jit_stack_free);
  pcre2_match_data* md = md_owner.get();
  pcre2_match_context* mc = mc_owner.get();
  if (js_owner) pcre2_jit_stack_assign(mc, nullptr, js_owner.get());
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t pos = 0;
  while (pos <= text.size()) {
    // A search tries at most kStartsPerCall start positions (the offset limit), so that the
    // clock is read between calls that each cost a bounded amount: a pattern that never
    // matches may still spend up to PCRE2's match limit at every start position (10 ms or
    // more each), and one unbounded call over a 3 KB text ran for a minute.
    const std::size_t limit = std::min(text.size(), pos + kStartsPerCall - 1);
    pcre2_set_offset_limit(mc, limit);
    int rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, mc);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > budget_s)
      throw ConfigError(impl_->where + ": pre-tokenizer regex '" + impl_->source + "' ran past " +
                        std::to_string(static_cast<int>(budget_s + 0.5)) + " s on a text of " +
                        std::to_string(text.size()) + " bytes, after " + std::to_string(out.size()) +
                        " matches (a pattern that backtracks at every position, or re-scans the rest of the "
                        "text at every match, is superlinear)");
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (limit >= text.size()) break;
      pos = limit + 1;  // the next start is the next character boundary past the limit
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (rc < 0) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(rc, buf, sizeof buf);
      // E.g. the match limit on a pathological pattern: name the file and the pattern.
      throw ConfigError(impl_->where + ": pre-tokenizer regex '" + impl_->source + "' failed on the input text: " +
                        reinterpret_cast<const char*>(buf));
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    std::size_t s = ov[0], e = ov[1];
    out.emplace_back(s, e);
    if (e == s) {
      if (e >= text.size()) break;
      std::size_t n = utf8_valid_len(text, e);
      pos = e + (n ? n : 1);
    } else {
      pos = e;
    }
  }
  return out;
}

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/#").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace llmport::tok
